import Crypto
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Node {
    /// The node's hash as the official clients compute it: base64 of SHA-1 over a canonical string,
    /// `""` for the empty node. Transactions send it with compare-and-set writes, so it must match
    /// bit for bit. Cached on nodes with children; O(size) the first time.
    ///
    /// Leaf: `[priority:<type>:<value>:]<type>:<value>` with type `boolean`, `number` (16 lowercase hex
    /// digits of the IEEE-754 double) or `string`. Children: the priority prefix, then
    /// `:<key>:<childHash>` for each non-empty child hash in priority order.
    public var hash: String {
        switch storage {
        case .empty, .max:
            return ""
        case .leaf(let value, let priority):
            return Self.sha1Base64(Self.priorityPrefix(priority) + Self.hashText(value))
        case .children(let storage):
            let (cached, kept) = storage.cache.withLock { ($0.hash, $0.packedHashes) }
            if let cached { return cached }
            // Without priorities the children come in key order, as the kept hashes do: both are
            // walked side by side instead of looked up.
            let inKeyOrder = storage.prioritizedChildren == 0
            var keptHashes = kept?.elements().makeIterator()
            var nextKept = keptHashes?.next()
            var added: [(ChildKey, String)] = []
            var text = Self.priorityPrefix(storage.priority)
            for child in children(in: .priority) {
                var childHash: String?
                if case .packed = child.node.storage {
                    if inKeyOrder {
                        while let entry = nextKept, ChildKey.compare(entry.key, child.name) < 0 {
                            nextKept = keptHashes?.next()
                        }
                        if let entry = nextKept, ChildKey.compare(entry.key, child.name) == 0 {
                            childHash = entry.value
                        }
                    } else {
                        childHash = kept?[child.name]
                    }
                    if childHash == nil {
                        let computed = child.node.hash
                        childHash = computed
                        added.append((child.name, computed))
                    }
                }
                let hash = childHash ?? child.node.hash
                if !hash.isEmpty { text += ":\(child.name.string):\(hash)" }
            }
            let hash = text.isEmpty ? "" : Self.sha1Base64(text)
            var packedHashes = kept ?? SortedMap(order: KeyOrder())
            if packedHashes.isEmpty, inKeyOrder {
                packedHashes = SortedMap(sorted: added, order: KeyOrder())
            } else {
                for (key, childHash) in added { packedHashes.insert(key, childHash) }
            }
            storage.cache.withLock {
                $0.hash = hash
                if !packedHashes.isEmpty { $0.packedHashes = packedHashes }
            }
            return hash
        case .packed:
            // No priorities inside: priority order is key order.
            var text = ""
            for (name, child) in children {
                let childHash = child.hash
                if !childHash.isEmpty { text += ":\(name.string):\(childHash)" }
            }
            return text.isEmpty ? "" : Self.sha1Base64(text)
        }
    }

    static func priorityPrefix(_ priority: Priority?) -> String {
        guard let priority else { return "" }
        return "priority:" + hashText(priority.leafValue) + ":"
    }

    static func hashText(_ value: LeafValue) -> String {
        switch value {
        case .bool(let value): "boolean:\(value)"
        case .number(let value): "number:" + ieee754Hex(value)
        case .string(let value): "string:" + value
        }
    }

    /// The 16 lowercase hex digits of a double's IEEE-754 bit pattern, most significant first.
    static func ieee754Hex(_ value: Double) -> String {
        let hex = String(value.bitPattern, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func sha1Base64(_ text: String) -> String {
        Data(Insecure.SHA1.hash(data: Data(text.utf8))).base64EncodedString()
    }
}
