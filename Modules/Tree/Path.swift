/// A location in the tree: keys from the root down, written `a/b/c`.
///
/// Leading, trailing and repeated slashes are ignored, so `"/a//b/"` is `a/b`. Dropping the first
/// key (``popFront()``) is O(1) and shares storage.
///
/// ```swift
/// let path = try Path(validating: "users/ada/name")
/// path.front        // "users"
/// path.popFront()   // ada/name
/// path.parent       // users/ada
/// ```
public struct Path: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    @usableFromInline var keys: ArraySlice<ChildKey>

    /// The root location.
    public static let root = Path(keys: [])

    public init<S: Sequence<ChildKey>>(keys: S) { self.keys = ArraySlice(keys) }

    /// A path over `keys` itself: `ArraySlice(keys)` would copy them.
    public init(keys: [ChildKey]) { self.keys = keys[...] }

    /// The path of `keys`, sharing their storage (a prefix of another path's components costs no copy).
    public init(keys: ArraySlice<ChildKey>) { self.keys = keys }

    /// A path built without validation; use it for paths the program itself spells.
    public init(_ string: String) {
        keys = string.split(separator: "/", omittingEmptySubsequences: true).map { ChildKey(String($0)) }[...]
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// A path checked against the rules for client-addressable locations: every key valid, at
    /// most 32 keys; `.info` may only stand first and `.priority` only last.
    public init(validating string: String) throws(TreeError) {
        var keys: [ChildKey] = []
        keys.reserveCapacity(string.utf8.count(where: { $0 == UInt8(ascii: "/") }) + 1)
        var utf8 = string.utf8[...]
        while !utf8.isEmpty {
            let end = utf8.firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
            if end != utf8.startIndex {
                let text = String(Substring(utf8[..<end]))
                if let reason = ChildKey.problem(with: text) {
                    // `.info` and `.priority` are not data keys, but may stand first and last.
                    let isLast =
                        end == utf8.endIndex || utf8[utf8.index(after: end)...].allSatisfy { $0 == UInt8(ascii: "/") }
                    if keys.isEmpty, text == ChildKey.info.string {
                        keys.append(.info)
                    } else if isLast, text == ChildKey.priority.string {
                        keys.append(.priority)
                    } else {
                        throw .invalidPath(string, reason: "key \"\(text)\" \(reason)")
                    }
                } else {
                    keys.append(ChildKey(text))
                }
            }
            utf8 = end == utf8.endIndex ? utf8[end...] : utf8[utf8.index(after: end)...]
        }
        if keys.count > TreeLimits.maxDepth {
            throw .invalidPath(string, reason: "is \(keys.count) levels deep (at most \(TreeLimits.maxDepth))")
        }
        self.keys = keys[...]
    }

    /// The first key, or `nil` at the root.
    @inlinable public var front: ChildKey? { keys.first }
    /// The last key, or `nil` at the root.
    @inlinable public var back: ChildKey? { keys.last }
    @inlinable public var isEmpty: Bool { keys.isEmpty }
    @inlinable public var count: Int { keys.count }
    /// The keys in order from the root.
    @inlinable public var components: ArraySlice<ChildKey> { keys }

    /// This path without its first key (the root stays the root). O(1).
    @inlinable public func popFront() -> Path { Path(slice: keys.isEmpty ? keys : keys.dropFirst()) }

    /// The path one level up, or `nil` at the root.
    public var parent: Path? { keys.isEmpty ? nil : Path(slice: keys.dropLast()) }

    @inlinable init(slice: ArraySlice<ChildKey>) { keys = slice }

    public func child(_ key: ChildKey) -> Path {
        // One allocation, of the final size.
        var copy: [ChildKey] = []
        copy.reserveCapacity(keys.count + 1)
        copy.append(contentsOf: keys)
        copy.append(key)
        return Path(keys: copy)
    }

    public func child(_ path: Path) -> Path {
        if path.isEmpty { return self }
        if isEmpty { return path }
        var copy: [ChildKey] = []
        copy.reserveCapacity(keys.count + path.keys.count)
        copy.append(contentsOf: keys)
        copy.append(contentsOf: path.keys)
        return Path(keys: copy)
    }

    /// Whether `other` is this path or lies below it.
    public func contains(_ other: Path) -> Bool {
        keys.count <= other.keys.count && keys.elementsEqual(other.keys.prefix(keys.count))
    }

    /// The part of `inner` below `outer`; `outer` must contain `inner`.
    public static func relative(from outer: Path, to inner: Path) -> Path {
        precondition(outer.contains(inner), "\(inner) is not below \(outer)")
        return Path(slice: inner.keys.dropFirst(outer.keys.count))
    }

    /// `/a/b` form, `/` for the root.
    public var description: String { "/" + keys.map(\.string).joined(separator: "/") }
    /// `a/b` form, empty for the root (the wire form of the realtime protocol).
    public var wireString: String {
        guard keys.count > 1 else { return keys.first?.string ?? "" }
        // Sized once and appended to: a store builds one for every row it writes.
        var text = ""
        text.reserveCapacity(keys.reduce(keys.count - 1) { $0 + $1.string.utf8.count })
        text += keys[keys.startIndex].string
        for key in keys.dropFirst() {
            text += "/"
            text += key.string
        }
        return text
    }

    public static func == (lhs: Path, rhs: Path) -> Bool { lhs.keys.elementsEqual(rhs.keys) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(keys.count)
        for key in keys { hasher.combine(key) }
    }

    /// Key-by-key order (a parent before its children).
    public static func < (lhs: Path, rhs: Path) -> Bool {
        for (a, b) in zip(lhs.keys, rhs.keys) {
            let order = ChildKey.compare(a, b)
            if order != 0 { return order < 0 }
        }
        return lhs.keys.count < rhs.keys.count
    }
}
