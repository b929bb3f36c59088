extension Node {
    /// The node's JSON text, the same characters as `json(exportFormat:).serialized(pretty:)`, written
    /// straight from the tree: members are already in key order, so nothing is sorted, and no
    /// ``JSONValue`` is built on the way (a REST read of a large location spent more on those two
    /// than on anything else).
    ///
    /// With `arrayAtTop` false, the node itself is written as an object even when its keys are
    /// `0`…`n` (how a query's answer is written); its descendants still become arrays.
    ///
    /// ```swift
    /// try Node(jsonText: #"{"b": 1, "a": [true]}"#).jsonText()  // {"a":[true],"b":1}
    /// ```
    public func jsonText(exportFormat: Bool = false, arrayAtTop: Bool = true, pretty: Bool = false) -> String {
        var writer = JSONTextWriter(exportFormat: exportFormat, pretty: pretty)
        writer.write(self, arrayAllowed: arrayAtTop, indent: 0)
        return writer.output
    }
}

/// Writes nodes as JSON text into one growing string.
private struct JSONTextWriter {
    let exportFormat: Bool
    let pretty: Bool
    var output = ""

    private static let priorityKey = ChildKey(".priority")

    init(exportFormat: Bool, pretty: Bool) {
        self.exportFormat = exportFormat
        self.pretty = pretty
    }

    mutating func write(_ node: Node, arrayAllowed: Bool, indent: Int) {
        switch node.storage {
        case .empty, .max:
            output += "null"
        case .leaf(let value, let priority):
            guard exportFormat, let priority else { return write(value) }
            // `.priority` sorts before `.value`.
            output += "{"
            memberKey(".priority", first: true, indent: indent)
            write(priority.leafValue)
            memberKey(".value", first: false, indent: indent)
            write(value)
            close("}", indent: indent)
        case .packed(let text) where !pretty:
            output += text
        case .children, .packed:
            let children = node.children
            if !exportFormat, arrayAllowed, let last = Self.arrayLength(of: children) {
                writeArray(children, length: last, indent: indent)
            } else {
                writeObject(children, priority: exportFormat ? node.priority : nil, indent: indent)
            }
        }
    }

    /// The array a children map exports as (see ``Node/json(exportFormat:)``): its length when every
    /// key is an array index and more than half the slots are filled.
    private static func arrayLength(of children: ChildMap) -> Int? {
        guard let first = children.first, Node.arrayIndex(first.key.string) != nil else { return nil }
        var maxIndex = -1
        var count = 0
        for (key, _) in children {
            guard let index = Node.arrayIndex(key.string) else { return nil }
            maxIndex = max(maxIndex, index)
            count += 1
        }
        return maxIndex < 2 * count ? maxIndex + 1 : nil
    }

    private mutating func writeArray(_ children: ChildMap, length: Int, indent: Int) {
        output += "["
        var next = 0
        for (key, child) in children {
            guard let index = Node.arrayIndex(key.string) else { continue }
            while next < index {
                element(first: next == 0, indent: indent)
                output += "null"
                next += 1
            }
            element(first: next == 0, indent: indent)
            write(child, arrayAllowed: true, indent: indent + 1)
            next += 1
        }
        while next < length {
            element(first: next == 0, indent: indent)
            output += "null"
            next += 1
        }
        close("]", indent: indent)
    }

    private mutating func writeObject(_ children: ChildMap, priority: Priority?, indent: Int) {
        output += "{"
        var first = true
        var pendingPriority = priority
        for (key, child) in children {
            if let priority = pendingPriority, Self.priorityKey < key {
                memberKey(".priority", first: first, indent: indent)
                write(priority.leafValue)
                pendingPriority = nil
                first = false
            }
            memberKey(key.string, first: first, indent: indent)
            write(child, arrayAllowed: true, indent: indent + 1)
            first = false
        }
        if let priority = pendingPriority {
            memberKey(".priority", first: first, indent: indent)
            write(priority.leafValue)
        }
        close("}", indent: indent)
    }

    private mutating func write(_ value: LeafValue) {
        switch value {
        case .bool(let value): output += value ? "true" : "false"
        case .number(let value): output += JSONValue.format(number: value)
        case .string(let value): JSONValue.writeString(value, to: &output)
        }
    }

    private mutating func element(first: Bool, indent: Int) {
        if !first { output += "," }
        if pretty { newline(indent + 1) }
    }

    private mutating func memberKey(_ key: String, first: Bool, indent: Int) {
        element(first: first, indent: indent)
        JSONValue.writeString(key, to: &output)
        output += pretty ? ": " : ":"
    }

    private mutating func close(_ bracket: String, indent: Int) {
        if pretty { newline(indent) }
        output += bracket
    }

    private mutating func newline(_ indent: Int) {
        output += "\n"
        output += String(repeating: "  ", count: indent)
    }
}
