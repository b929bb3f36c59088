import Tree

/// Runs the `.validate` rules a write must satisfy: at every location whose new data is not null
/// among the written locations, those above them, and those inside the written values. Subtrees
/// of the rules without `.validate` are skipped, and a location's current and new data are looked
/// up only when a rule there reads them.
struct WriteValidation {
    var context: EvaluationContext
    /// The location being validated, from the root: on the way down to a written location a prefix
    /// of its path (sharing the path's storage), inside the written value that plus the keys below.
    private var keys: ArraySlice<ChildKey> = []

    init(context: EvaluationContext) {
        self.context = context
    }

    /// Validates the write of `value` at `path` (a set), from `root`: the locations above `path`,
    /// `path` itself and those inside `value`. Returns the first rule that fails.
    mutating func validate(_ root: RuleLocation, set path: Path, to value: Node) -> RuleFailure? {
        let all = path.components
        var location = root
        var depth = 0
        while depth < all.count {
            keys = all.prefix(depth)
            if let failure = check(location, data: nil, newData: nil) { return failure }
            let key = all[all.startIndex + depth]
            guard !key.isPriorityKey, let (child, _) = location.child(key), child.hasValidation else { return nil }
            location = child
            depth += 1
        }
        keys = all
        if let failure = check(location, data: nil, newData: value) { return failure }
        return validateInside(location, data: nil, newData: value)
    }

    /// Validates `location` (at ``keys``; its current data `data` and new data `newData`, each
    /// `nil` when not worked out yet) and, below it, the written locations `writes` (absolute,
    /// sorted, each at or below `location`). Returns the first rule that fails.
    mutating func validate(
        _ location: RuleLocation, data: Node?, newData: Node?, writes: ArraySlice<Path>
    ) -> RuleFailure? {
        let depth = keys.count
        if writes.contains(where: { $0.components.count == depth }) {
            let written = newData ?? context.check.newTree.node(at: keys)
            if let failure = check(location, data: data, newData: written) { return failure }
            return validateInside(location, data: data, newData: written)
        }
        if let failure = check(location, data: data, newData: newData) { return failure }
        var start = writes.startIndex
        while start < writes.endIndex {
            let below = writes[start].components
            let key = below[below.startIndex + depth]
            var end = start + 1
            while end < writes.endIndex, writes[end].components[writes[end].components.startIndex + depth] == key {
                end += 1
            }
            if !key.isPriorityKey, let (child, _) = location.child(key), child.hasValidation {
                let above = keys
                keys = below.prefix(depth + 1)
                let failure = validate(
                    child, data: data?.child(key), newData: newData?.child(key), writes: writes[start..<end])
                keys = above
                if let failure { return failure }
            }
            start = end
        }
        return nil
    }

    /// Validates every location inside the written value `newData` (not `location` itself).
    private mutating func validateInside(_ location: RuleLocation, data: Node?, newData: Node) -> RuleFailure? {
        guard newData.childCount > 0 else { return nil }
        if location.wildcard != nil {
            for (key, child) in newData.children {
                guard let (childLocation, _) = location.child(key), childLocation.hasValidation else { continue }
                if let failure = validateChild(childLocation, key, data: data, newData: child) { return failure }
            }
        } else {
            for (key, childLocation) in location.children where childLocation.hasValidation {
                let child = newData.child(key)
                guard !child.isEmpty else { continue }
                if let failure = validateChild(childLocation, key, data: data, newData: child) { return failure }
            }
        }
        return nil
    }

    private mutating func validateChild(
        _ location: RuleLocation, _ key: ChildKey, data: Node?, newData: Node
    ) -> RuleFailure? {
        keys.append(key)
        defer { keys.removeLast() }
        let childData = data?.child(key)
        if let failure = check(location, data: childData, newData: newData) { return failure }
        return validateInside(location, data: childData, newData: newData)
    }

    /// The failure of the `.validate` rule of `location`, if it has one, the new data there (`nil`:
    /// work it out) is not null, and the rule does not hold.
    private mutating func check(_ location: RuleLocation, data: Node?, newData: Node?) -> RuleFailure? {
        guard let rule = location.validate else { return nil }
        let newData = newData ?? context.check.newTree.node(at: keys)
        guard !newData.isEmpty else { return nil }
        context.enter(keys, data: data, newData: newData, for: rule)
        let outcome = rule.evaluate(in: &context)
        context.leave(rule)
        guard case .failed(let error) = outcome else { return nil }
        return RuleFailure(rule: rule.reference(at: keys), error: error)
    }
}
