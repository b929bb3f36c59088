import Tree

/// Runs the `.validate` rules a write must satisfy: at every location whose new data is not null
/// among the written locations, those above them, and those inside the written values. Subtrees
/// of the rules without `.validate` are skipped, and a location's current and new data are looked
/// up only when a rule there reads them.
struct WriteValidation {
    var context: EvaluationContext
    /// The location being validated, from the root.
    private var keys: [ChildKey] = []

    init(context: EvaluationContext) {
        self.context = context
        self.context.captures.removeAll(keepingCapacity: true)
        keys.reserveCapacity(8)
    }

    /// Validates `location` (at ``keys``; its current data `data` and new data `newData`, each
    /// `nil` when not worked out yet) and, below it, the written locations `writes` (absolute,
    /// sorted, each at or below `location`). Returns the first rule that fails.
    mutating func validate(
        _ location: RuleLocation, data: Node?, newData: Node?, writes: ArraySlice<Path>
    ) -> RuleFailure? {
        let depth = keys.count
        if writes.contains(where: { $0.components.count == depth }) {
            let written = newData ?? context.newTree.node(at: keys)
            if let failure = check(location, data: data, newData: written) { return failure }
            return validateInside(location, data: data, newData: written)
        }
        if let failure = check(location, data: data, newData: newData) { return failure }
        var start = writes.startIndex
        while start < writes.endIndex {
            let key = writes[start].components[writes[start].components.startIndex + depth]
            var end = start + 1
            while end < writes.endIndex, writes[end].components[writes[end].components.startIndex + depth] == key {
                end += 1
            }
            if !key.isPriorityKey, let (child, captured) = location.child(key), child.hasValidation {
                enter(key, captured: captured)
                let failure = validate(
                    child, data: data?.child(key), newData: newData?.child(key), writes: writes[start..<end])
                leave(captured: captured)
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
                guard let (childLocation, captured) = location.child(key), childLocation.hasValidation else { continue }
                if let failure = validateChild(childLocation, key, captured, data: data, newData: child) {
                    return failure
                }
            }
        } else {
            for (key, childLocation) in location.children where childLocation.hasValidation {
                let child = newData.child(key)
                guard !child.isEmpty else { continue }
                if let failure = validateChild(childLocation, key, false, data: data, newData: child) { return failure }
            }
        }
        return nil
    }

    private mutating func validateChild(
        _ location: RuleLocation, _ key: ChildKey, _ captured: Bool, data: Node?, newData: Node
    ) -> RuleFailure? {
        enter(key, captured: captured)
        defer { leave(captured: captured) }
        let childData = data?.child(key)
        if let failure = check(location, data: childData, newData: newData) { return failure }
        return validateInside(location, data: childData, newData: newData)
    }

    private mutating func enter(_ key: ChildKey, captured: Bool) {
        keys.append(key)
        if captured { context.captures.append(key.string) }
    }

    private mutating func leave(captured: Bool) {
        keys.removeLast()
        if captured { context.captures.removeLast() }
    }

    /// The failure of the `.validate` rule of `location`, if it has one, the new data there (`nil`:
    /// work it out) is not null, and the rule does not hold.
    private mutating func check(_ location: RuleLocation, data: Node?, newData: Node?) -> RuleFailure? {
        guard let rule = location.validate else { return nil }
        let newData = newData ?? context.newTree.node(at: keys)
        guard !newData.isEmpty else { return nil }
        if rule.readsData {
            let current = data ?? keys.reduce(context.root.node) { $0.child($1) }
            context.data = RuleSnapshot(keys: keys[...], node: current)
        }
        context.newData = RuleSnapshot(keys: keys[...], node: newData, isNewData: true)
        let outcome = rule.evaluate(in: context)
        // Drop the snapshots' hold on `keys`, so that appending to it does not copy it.
        context.data = context.root
        context.newData = context.root
        guard case .failed(let error) = outcome else { return nil }
        return RuleFailure(rule: rule.reference(at: keys), error: error)
    }
}
