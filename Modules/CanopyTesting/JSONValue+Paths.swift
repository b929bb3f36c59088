import Tree

extension JSONValue {
    /// This tree with `value` at `path` (slash-separated), without nulls and empty objects: how a
    /// client applies what a listen pushes, and how the cluster harness rebuilds a namespace from
    /// its rows.
    func setting(_ value: JSONValue, at path: String) -> JSONValue {
        setting(value, at: path.split(separator: "/").map(String.init)[...])
    }

    private func setting(_ value: JSONValue, at keys: ArraySlice<String>) -> JSONValue {
        guard let key = keys.first else { return value.pruned }
        var members = objectValue ?? [:]
        let child = (members[key] ?? .null).setting(value, at: keys.dropFirst())
        members[key] = child == .null ? nil : child
        return members.isEmpty ? .null : .object(members)
    }

    private var pruned: JSONValue {
        guard case .object(let members) = self else { return self }
        let kept = members.compactMapValues { member -> JSONValue? in
            let pruned = member.pruned
            return pruned == .null ? nil : pruned
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// The value at `path` (slash-separated), `.null` when there is none.
    func value(at path: String) -> JSONValue {
        var node = self
        for key in path.split(separator: "/") { node = node[String(key)] ?? .null }
        return node
    }
}
