public import Tree

/// The Firebase query calls (`orderByChild`, `startAt`, `limitToLast`, …), each returning new params
/// and refusing the combinations the official SDKs refuse.
///
/// ```swift
/// // orderByChild("height").startAfter(3).limitToFirst(2)
/// let params = try QueryParams()
///     .ordered(by: .child("height"))
///     .starting(after: Node(.number(3)))
///     .limited(toFirst: 2)
/// ```
///
/// Every call checks the resulting params as a whole, so an ordering chosen after its bounds is held
/// to the same rules as one chosen before them.
extension QueryParams {
    /// `orderByKey()`, `orderByValue()`, `orderByPriority()` or `orderByChild(path)`.
    ///
    /// - Throws: ``QueryError/indexAlreadySet`` when an ordering other than priority is set (an
    ///   explicit priority ordering cannot be told apart from the default, so it may be repeated);
    ///   ``QueryError/invalidIndex(_:reason:)`` for an empty child path or one holding an invalid key;
    ///   ``QueryError/invalidBound(index:value:reason:)`` when bounds set earlier do not suit `index`.
    public func ordered(by index: Index) throws(QueryError) -> QueryParams {
        if self.index != .priority { throw .indexAlreadySet }
        try Self.check(index)
        var params = self
        params.index = index
        try params.checkBounds()
        return params
    }

    /// `startAt(value, key)`: children from `value` on; at `value`, from the child named `key` on.
    ///
    /// - Throws: ``QueryError/conflictingBounds(_:)`` when a start is set (by `startAt`, `startAfter`
    ///   or `equalTo`); ``QueryError/invalidBound(index:value:reason:)`` when the index cannot order
    ///   by `value` or `key` is not a valid key.
    public func starting(at value: Node, key: ChildKey? = nil) throws(QueryError) -> QueryParams {
        let name = try checkedName(key, value: value)
        return try settingStart(Bound(value: value.withPriority(nil), name: name), method: "startAt")
    }

    /// `startAfter(value, key)`: children strictly after `value`, or after the child named `key` at
    /// `value`. Without a key the name is the sentinel ``ChildKey/max`` (past every key at `value`),
    /// except when ordering by key, where `value` is itself the key to start after.
    ///
    /// - Throws: as ``starting(at:key:)``.
    public func starting(after value: Node, key: ChildKey? = nil) throws(QueryError) -> QueryParams {
        let name = try checkedName(key, value: value)
        let bound = Bound(value: value.withPriority(nil), name: exclusiveName(name, beyond: .max), inclusive: false)
        return try settingStart(bound, method: "startAfter")
    }

    /// `endAt(value, key)`: children up to `value`; at `value`, up to the child named `key`.
    ///
    /// - Throws: ``QueryError/conflictingBounds(_:)`` when an end is set (by `endAt`, `endBefore` or
    ///   `equalTo`); ``QueryError/invalidBound(index:value:reason:)`` as for ``starting(at:key:)``.
    public func ending(at value: Node, key: ChildKey? = nil) throws(QueryError) -> QueryParams {
        let name = try checkedName(key, value: value)
        return try settingEnd(Bound(value: value.withPriority(nil), name: name), method: "endAt")
    }

    /// `endBefore(value, key)`: children strictly before `value`, or before the child named `key` at
    /// `value`. Without a key the name is the sentinel ``ChildKey/min``, except when ordering by key.
    ///
    /// - Throws: as ``ending(at:key:)``.
    public func ending(before value: Node, key: ChildKey? = nil) throws(QueryError) -> QueryParams {
        let name = try checkedName(key, value: value)
        let bound = Bound(value: value.withPriority(nil), name: exclusiveName(name, beyond: .min), inclusive: false)
        return try settingEnd(bound, method: "endBefore")
    }

    /// `equalTo(value, key)`: children whose indexed value is `value` (with `key`, only that child).
    /// `equal(to: .empty)` selects the children whose indexed value is null.
    ///
    /// - Throws: ``QueryError/conflictingBounds(_:)`` when a start or an end is set;
    ///   ``QueryError/invalidBound(index:value:reason:)`` as for ``starting(at:key:)``.
    public func equal(to value: Node, key: ChildKey? = nil) throws(QueryError) -> QueryParams {
        let name = try checkedName(key, value: value)
        return try settingEquality(Bound(value: value.withPriority(nil), name: name))
    }

    /// `limitToFirst(count)`: the first `count` children of the range.
    ///
    /// - Throws: ``QueryError/invalidLimit(_:)`` unless `count` is positive;
    ///   ``QueryError/limitAlreadySet`` when a limit is set.
    public func limited(toFirst count: Int) throws(QueryError) -> QueryParams {
        try settingLimit(.first(count))
    }

    /// `limitToLast(count)`: the last `count` children of the range.
    ///
    /// - Throws: as ``limited(toFirst:)``.
    public func limited(toLast count: Int) throws(QueryError) -> QueryParams {
        try settingLimit(.last(count))
    }
}

// The steps below take bounds whose names are already decided, so that the wire and REST readers,
// which may carry the sentinel names, share the builder's rules.
extension QueryParams {
    /// The name an exclusive bound stores: on the key index the value names the key, elsewhere an
    /// absent key means every key at the value (`beyond` is the sentinel past them).
    func exclusiveName(_ name: ChildKey?, beyond sentinel: ChildKey) -> ChildKey? {
        index == .key ? name : (name ?? sentinel)
    }

    func settingStart(_ bound: Bound, method: String) throws(QueryError) -> QueryParams {
        if start != nil {
            throw .conflictingBounds("\(method) cannot be combined with an earlier startAt, startAfter or equalTo")
        }
        var params = self
        params.start = bound
        try params.checkBounds()
        return params
    }

    func settingEnd(_ bound: Bound, method: String) throws(QueryError) -> QueryParams {
        if end != nil {
            throw .conflictingBounds("\(method) cannot be combined with an earlier endAt, endBefore or equalTo")
        }
        var params = self
        params.end = bound
        try params.checkBounds()
        return params
    }

    func settingEquality(_ bound: Bound) throws(QueryError) -> QueryParams {
        if let start {
            throw .conflictingBounds("equalTo cannot be combined with \(start.inclusive ? "startAt" : "startAfter")")
        }
        if let end {
            throw .conflictingBounds("equalTo cannot be combined with \(end.inclusive ? "endAt" : "endBefore")")
        }
        var params = self
        params.start = bound
        params.end = bound
        try params.checkBounds()
        return params
    }

    private func settingLimit(_ limit: Limit) throws(QueryError) -> QueryParams {
        guard limit.count > 0 else { throw .invalidLimit(limit.count) }
        if self.limit != nil { throw .limitAlreadySet }
        var params = self
        params.limit = limit
        return params
    }

    /// `key` when a caller may name it: sentinels and `.`-keys are not keys of data.
    private func checkedName(_ key: ChildKey?, value: Node) throws(QueryError) -> ChildKey? {
        guard let key else { return nil }
        if let problem = ChildKey.problem(with: key.string) {
            throw .invalidBound(index: index, value: value.json(), reason: "key name \"\(key)\" \(problem)")
        }
        return key
    }

    /// Rejects child paths no client can order by.
    static func check(_ index: Index) throws(QueryError) {
        guard case .child(let path) = index else { return }
        if path.isEmpty {
            throw .invalidIndex("", reason: "the child path is empty; order by value to use the children themselves")
        }
        for key in path.components {
            if let problem = ChildKey.problem(with: key.string) {
                throw .invalidIndex(path.wireString, reason: "key \"\(key)\" \(problem)")
            }
        }
    }

    /// Checks every bound against the index, as the official SDKs do after each query call.
    func checkBounds() throws(QueryError) {
        if let start { try check(start) }
        if let end { try check(end) }
    }

    private func check(_ bound: Bound) throws(QueryError) {
        let leaf = bound.value.leafValue
        func rejected(_ reason: String) -> QueryError {
            .invalidBound(index: index, value: bound.value.json(), reason: reason)
        }
        if leaf == nil, !bound.value.isEmpty {
            throw rejected("a bound must be null, a boolean, a number or a string, not an object")
        }
        if case .number(let number)? = leaf, !number.isFinite { throw rejected("a number bound must be finite") }
        switch index {
        case .key:
            guard case .string? = leaf else { throw rejected("when ordering by key, a bound must be a string key") }
            if let name = bound.name {
                throw rejected(
                    name == .max || name == .min
                        ? "orderByKey must come before startAfter or endBefore"
                        : "when ordering by key, the value is the key; no key name may be given")
            }
        case .priority:
            if case .bool? = leaf {
                throw rejected("when ordering by priority, a bound must be null, a number or a string")
            }
        case .value, .child:
            break
        }
    }
}
