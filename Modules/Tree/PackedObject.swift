/// Small objects held as their compact JSON text instead of a node per member.
///
/// A record of a few leaves (`{"bio": "…", "name": "ada", "score": 36}`) costs a ``ChildrenStorage``,
/// a child map of one tree node per member and a ``Node`` per leaf when built member by member:
/// about five times its JSON size, and most of the time of a write that adds many of them. Packed,
/// it is one string, which a read writes out as it stands and a store keeps as one row (see
/// ``Node/packedText``). Its members are decoded when something looks inside.
///
/// Packed text is canonical, so two packed objects are equal exactly when their texts are: members
/// in key order, written as ``Node/jsonText(exportFormat:arrayAtTop:pretty:)`` writes them. Only
/// objects whose text it can be are packed: no priorities, server values or `.value` members, no
/// key that reads as an integer (such objects may be written as arrays), no arrays, no `-0`.
enum PackedObject {
    /// The longest packed text, in bytes.
    static let maxBytes = 1024
    /// The most members of one packed object (nested objects count their own).
    static let maxMembers = 32

    /// The packed text of an object with `members` lying `depth` levels deep, or `nil` when it
    /// cannot be packed (including every case the node builder refuses, which it then reports).
    static func text(of members: [String: JSONValue], depth: Int) -> String? {
        var output = ""
        output.reserveCapacity(128)
        guard append(members, depth: depth, to: &output) else { return nil }
        return output
    }

    private static func append(_ members: [String: JSONValue], depth: Int, to output: inout String) -> Bool {
        guard members.count <= maxMembers, depth < TreeLimits.maxDepth else { return false }
        var sorted: [(key: ChildKey, value: JSONValue)] = []
        sorted.reserveCapacity(members.count)
        for (name, value) in members {
            if case .null = value { continue }
            guard ChildKey.problem(with: name) == nil else { return false }
            let key = ChildKey(name)
            guard key.integerValue == nil else { return false }
            sorted.append((key, value))
        }
        guard !sorted.isEmpty else { return false }
        sorted.sort { ChildKey.compare($0.key, $1.key) < 0 }
        output += "{"
        for (offset, member) in sorted.enumerated() {
            if offset > 0 { output += "," }
            JSONValue.writeString(member.key.string, to: &output)
            output += ":"
            switch member.value {
            case .bool(let value):
                output += value ? "true" : "false"
            case .number(let value):
                guard value.isFinite, value != 0 || value.sign == .plus else { return false }
                output += JSONValue.format(number: value)
            case .string(let value):
                guard value.utf8.count <= maxBytes else { return false }
                JSONValue.writeString(value, to: &output)
            case .object(let inner):
                guard append(inner, depth: depth + 1, to: &output) else { return false }
            case .array, .null:
                return false
            }
            guard output.utf8.count <= maxBytes else { return false }
        }
        output += "}"
        // The closing brace counts too: a longer text would be refused when a store loads it.
        return output.utf8.count <= maxBytes
    }

    /// The children `text` packs, in key order.
    static func children(of text: String) -> ChildMap {
        var pairs: [(ChildKey, Node)] = []
        read(text) { key, scanner throws(TreeError) in
            pairs.append((ChildKey(key), try node(&scanner)))
            return true
        }
        return ChildMap(sorted: pairs, order: KeyOrder())
    }

    /// The child `key` of the object `text` packs, or `nil`; decodes that member only.
    static func child(_ key: ChildKey, in text: String) -> Node? {
        var found: Node?
        read(text) { name, scanner throws(TreeError) in
            guard compareStrings(name, key.string) == 0 else {
                try skip(&scanner)
                return true
            }
            found = try node(&scanner)
            return false
        }
        return found
    }

    /// How many members the object `text` packs.
    static func count(of text: String) -> Int {
        var count = 0
        read(text) { _, scanner throws(TreeError) in
            try skip(&scanner)
            count += 1
            return true
        }
        return count
    }

    /// Calls `member` with each member's name and a scanner at its value, which it must read or
    /// skip; stops when `member` returns `false`. Packed text is written by ``text(of:depth:)``
    /// only, so it is valid compact JSON.
    private static func read(_ text: String, _ member: (String, inout JSONScanner) throws(TreeError) -> Bool) {
        var text = text
        text.withUTF8 { bytes in
            var scanner = JSONScanner(bytes, isValidUTF8: true)
            do throws(TreeError) {
                try members(&scanner, member)
            } catch {
                assertionFailure("packed text that does not decode: \(error)")
            }
        }
    }

    /// Reads the object at the scanner's position member by member (see ``read(_:_:)``).
    private static func members(
        _ scanner: inout JSONScanner, _ member: (String, inout JSONScanner) throws(TreeError) -> Bool
    ) throws(TreeError) {
        scanner.position += 1
        while scanner.position < scanner.bytes.count {
            let name = try scanner.string()
            scanner.position += 1
            guard try member(name, &scanner) else { return }
            let separator = scanner.bytes[scanner.position]
            scanner.position += 1
            if separator == UInt8(ascii: "}") { return }
        }
    }

    /// The node of the value at the scanner's position.
    private static func node(_ scanner: inout JSONScanner) throws(TreeError) -> Node {
        switch scanner.bytes[scanner.position] {
        case UInt8(ascii: "{"):
            var pairs: [(ChildKey, Node)] = []
            try members(&scanner) { key, scanner throws(TreeError) in
                pairs.append((ChildKey(key), try node(&scanner)))
                return true
            }
            return Node(map: ChildMap(sorted: pairs, order: KeyOrder()), priority: nil)
        case UInt8(ascii: "\""):
            return Node(.string(try scanner.string()))
        case UInt8(ascii: "t"):
            scanner.position += 4
            return Node(.bool(true))
        case UInt8(ascii: "f"):
            scanner.position += 5
            return Node(.bool(false))
        default:
            return Node(.number(try scanner.number()))
        }
    }

    /// Moves past the value at the scanner's position.
    private static func skip(_ scanner: inout JSONScanner) throws(TreeError) {
        var depth = 0
        let bytes = scanner.bytes
        while scanner.position < bytes.count {
            switch bytes[scanner.position] {
            case UInt8(ascii: "\""):
                scanner.position += 1
                while bytes[scanner.position] != UInt8(ascii: "\"") {
                    scanner.position += bytes[scanner.position] == UInt8(ascii: "\\") ? 2 : 1
                }
                scanner.position += 1
                if depth == 0 { return }
            case UInt8(ascii: "{"):
                depth += 1
                scanner.position += 1
            case UInt8(ascii: "}"):
                if depth == 0 { return }
                depth -= 1
                scanner.position += 1
                if depth == 0 { return }
            case UInt8(ascii: ","):
                if depth == 0 { return }
                scanner.position += 1
            default:
                scanner.position += 1
            }
        }
    }
}

extension Node {
    /// A node whose children are the members of `text`, the packed text of an object (see
    /// ``packedText``). Only for text that ``packedText`` gave, stored and read back unchanged.
    package init(packedObject text: String) {
        self.init(storage: .packed(text))
    }

    /// The compact JSON text this node's children are held as, when they are packed: a small
    /// object written by the server (see ``init(json:at:existing:serverValues:packing:)``) or
    /// read from a store that kept it as one row.
    package var packedText: String? {
        if case .packed(let text) = storage { return text }
        return nil
    }

    static func unpacked(_ text: String) -> ChildMap { PackedObject.children(of: text) }

    /// Whether `text` is the packed text of an object, exactly as ``packedText`` spells it: what a
    /// store checks before it takes a row for one (``init(packedObject:)`` trusts its text).
    package static func isPackedText(_ text: String) -> Bool {
        guard text.utf8.count <= PackedObject.maxBytes else { return false }
        // Checked in place when it can be (no escapes, numbers spelled plainly): a store loading a
        // namespace checks every record, and parsing each left its garbage among the nodes kept.
        var text = text
        if text.withUTF8({ PackedObject.isCanonical($0, depth: 0) }) { return true }
        guard case .object(let members)? = try? JSONValue(parsing: text) else { return false }
        return PackedObject.text(of: members, depth: 0)?.utf8.elementsEqual(text.utf8) == true
    }
}
