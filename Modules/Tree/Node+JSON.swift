extension Node {
    /// A node from JSON, validated as data written at `path`.
    ///
    /// - `path` must be writable (``Path/checkWritable()``): no `.info`, `.priority` only last. At a
    ///   `.priority` location the value must be a priority: a number, a string, `null` or a server
    ///   value.
    /// - Keys must be valid (``ChildKey/problem(with:)``); `.priority`, `.value` and `.sv` are the
    ///   only `.`-keys allowed, `.value` holds a leaf and may only stand beside `.priority`, and `.sv`
    ///   stands alone.
    /// - The written location may be at most 32 levels deep; strings at most 10 MB; numbers finite,
    ///   also once server values are resolved (an `increment` that overflows is refused).
    /// - Arrays become children `"0"`, `"1"`, …; `null` members are dropped.
    /// - Server values are resolved with `serverValues` against `existing` (the data currently at
    ///   `path`); without a context they are an error.
    ///
    /// ```swift
    /// let node = try Node(json: ["name": "ada", ".priority": 1])
    /// ```
    public init(
        json: JSONValue, at path: Path = .root, existing: Node = .empty, serverValues: ServerValueContext? = nil
    ) throws(TreeError) {
        try self.init(json: json, at: path, existing: existing, serverValues: serverValues, packing: false)
    }

    /// ``init(json:at:existing:serverValues:)``, holding small objects as their compact JSON text
    /// when `packing` (see ``packedText``): what the server builds from what clients write.
    package init(
        json: JSONValue, at path: Path = .root, existing: Node = .empty, serverValues: ServerValueContext?,
        packing: Bool
    ) throws(TreeError) {
        try path.checkWritable()
        var builder = NodeBuilder(serverValues: serverValues, packing: packing, depth: path.count, path: path)
        if path.back?.isPriorityKey == true {
            // `existing` is the priority's own node here (what the `.priority` pseudo-child reads).
            self = try builder.priority(json, existing).map { Node($0.leafValue) } ?? .empty
        } else {
            self = try builder.build(json, existing: existing)
        }
    }

    /// A node from JSON text; see ``init(json:at:existing:serverValues:)``.
    public init(jsonText: String, at path: Path = .root) throws(TreeError) {
        try self.init(json: JSONValue(parsing: jsonText), at: path)
    }

    /// The node as JSON. Objects whose keys are all `0`…`n` with more than half the slots filled
    /// export as arrays. With `exportFormat`, priorities appear as `.priority` (and leaves with a
    /// priority as `{".value": v, ".priority": p}`).
    public func json(exportFormat: Bool = false) -> JSONValue {
        switch storage {
        case .empty, .max:
            return .null
        case .leaf(let value, let priority):
            let leaf = value.json
            guard exportFormat, let priority else { return leaf }
            return .object([".value": leaf, ".priority": priority.leafValue.json])
        case .children, .packed:
            let children = children
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(children.count)
            var maxIndex = -1
            var allArrayIndexes = !exportFormat
            for (key, child) in children {
                members[key.string] = child.json(exportFormat: exportFormat)
                if allArrayIndexes, let index = Self.arrayIndex(key.string) {
                    maxIndex = Swift.max(maxIndex, index)
                } else {
                    allArrayIndexes = false
                }
            }
            if !exportFormat, allArrayIndexes, maxIndex < 2 * members.count {
                var array = [JSONValue](repeating: .null, count: maxIndex + 1)
                for (key, value) in members { if let index = Self.arrayIndex(key) { array[index] = value } }
                return .array(array)
            }
            if exportFormat, let priority { members[".priority"] = priority.leafValue.json }
            return .object(members)
        }
    }

    /// The index a key names in array export (`0` or no leading zero), if any.
    static func arrayIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 9, first != UInt8(ascii: "0") || utf8.count == 1 else {
            return nil
        }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

extension Node: CustomStringConvertible {
    public var description: String {
        if case .max = storage { return "[MAX]" }
        return json(exportFormat: true).serialized()
    }
}

extension LeafValue {
    public var json: JSONValue {
        switch self {
        case .bool(let value): .bool(value)
        case .number(let value): .number(value)
        case .string(let value): .string(value)
        }
    }
}

/// Walks JSON into a node, validating as it goes.
private struct NodeBuilder {
    let serverValues: ServerValueContext?
    let packing: Bool
    var depth: Int
    var path: Path

    mutating func build(_ json: JSONValue, existing: Node) throws(TreeError) -> Node {
        if depth > TreeLimits.maxDepth {
            throw .invalidData(
                path: path.wireString, reason: "is deeper than the maximum of \(TreeLimits.maxDepth) levels")
        }
        switch json {
        case .null:
            return .empty
        case .bool(let value):
            return Node(.bool(value))
        case .number(let value):
            return Node(try leafNumber(value))
        case .string(let value):
            return Node(try leafString(value))
        case .array(let elements):
            var map = ChildMap(order: KeyOrder())
            for (offset, element) in elements.enumerated() {
                let key = ChildKey(String(offset))
                let child = try descend(key, element, existing: existing)
                if !child.isEmpty { map.insert(key, child) }
            }
            return Node(map: map, priority: nil)
        case .object(let members):
            return try buildObject(members, existing: existing)
        }
    }

    private mutating func buildObject(_ members: [String: JSONValue], existing: Node) throws(TreeError) -> Node {
        if let placeholder = members[ServerValue.key] {
            guard members.count == 1 else {
                throw .invalidData(path: path.wireString, reason: "contains .sv beside other members")
            }
            return Node(try resolve(placeholder, existing: existing))
        }
        if packing, let text = PackedObject.text(of: members, depth: depth) {
            return Node(packedObject: text)
        }
        let priority = try members[".priority"].flatMap { json throws(TreeError) in
            try self.priority(json, existing.priorityNode)
        }
        if let value = members[".value"] {
            if members.count > (members[".priority"] == nil ? 1 : 2) {
                throw .invalidData(path: path.wireString, reason: "contains .value beside other children")
            }
            switch value {
            case .array,
                .object(_) where value[ServerValue.key] == nil:
                throw .invalidData(
                    path: path.wireString, reason: ".value must hold a boolean, number, string or server value")
            default: break
            }
            let node = try build(value, existing: existing)
            return node.withPriority(priority)
        }
        // A small object (most records are) goes straight into its map; a large one is sorted
        // first and built balanced in one pass.
        var map = ChildMap(order: KeyOrder())
        var sorted: [(ChildKey, Node)] = []
        let direct = members.count <= Self.directInsertMembers
        if !direct { sorted.reserveCapacity(members.count) }
        for (name, member) in members where name != ".priority" {
            if let reason = ChildKey.problem(with: name) {
                throw .invalidData(path: path.wireString, reason: "key \"\(name)\" \(reason)")
            }
            let key = ChildKey(name)
            let child = try descend(key, member, existing: existing)
            guard !child.isEmpty else { continue }
            if direct { map.insert(key, child) } else { sorted.append((key, child)) }
        }
        if !direct {
            sorted.sort { ChildKey.compare($0.0, $1.0) < 0 }
            map = ChildMap(sorted: sorted, order: KeyOrder())
        }
        return Node(map: map, priority: priority)
    }

    /// Up to how many members an object's children are inserted one by one rather than sorted.
    private static let directInsertMembers = 16

    private mutating func descend(_ key: ChildKey, _ json: JSONValue, existing: Node) throws(TreeError) -> Node {
        // In place: one buffer serves the whole walk instead of a new path per node.
        path.keys.append(key)
        depth += 1
        defer {
            path.keys.removeLast()
            depth -= 1
        }
        return try build(json, existing: existing.child(key))
    }

    /// The priority `json` spells; server values resolve against `existing`, the current priority
    /// as a node.
    func priority(_ json: JSONValue, _ existing: Node) throws(TreeError) -> Priority? {
        switch json {
        case .null: return nil
        case .number(let value): return .number(try finite(value, "priority"))
        case .string(let value): return .string(value)
        case .object(let members) where members[ServerValue.key] != nil:
            guard members.count == 1 else {
                throw .invalidData(path: path.wireString, reason: "contains .sv beside other members")
            }
            return Priority(leaf: try resolve(members[ServerValue.key] ?? .null, existing: existing))
        default:
            throw .invalidData(path: path.wireString, reason: "priority must be a string, a number or null")
        }
    }

    /// The value of the server-value placeholder `json` (the `.sv` member) over `existing`.
    private func resolve(_ json: JSONValue, existing: Node) throws(TreeError) -> LeafValue {
        let serverValue = try ServerValue(json: json, path: path)
        guard let serverValues else {
            throw .invalidData(path: path.wireString, reason: "server values are not allowed here")
        }
        return try serverValue.resolved(existing: existing, now: serverValues.now, at: path)
    }

    private func leafNumber(_ value: Double) throws(TreeError) -> LeafValue {
        .number(try finite(value, "number"))
    }

    private func finite(_ value: Double, _ what: String) throws(TreeError) -> Double {
        guard value.isFinite else { throw .invalidData(path: path.wireString, reason: "\(what) is not finite") }
        return value
    }

    private func leafString(_ value: String) throws(TreeError) -> LeafValue {
        let bytes = value.utf8.count
        if bytes > TreeLimits.maxStringBytes {
            throw .invalidData(
                path: path.wireString,
                reason: "string is \(bytes) bytes long (at most \(TreeLimits.maxStringBytes))")
        }
        return .string(value)
    }
}
