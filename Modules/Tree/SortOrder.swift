/// A total order over values, as a three-way comparison (negative, zero, positive).
///
/// ``SortedMap`` is generic over its order so that key order and every ``Index`` compare without
/// dynamic dispatch.
public protocol SortOrder<Element>: Sendable {
    associatedtype Element
    func compare(_ a: Element, _ b: Element) -> Int
}

/// The natural order of a `Comparable` type.
public struct NaturalOrder<Element: Comparable>: SortOrder {
    public init() {}
    @inlinable public func compare(_ a: Element, _ b: Element) -> Int { a < b ? -1 : (b < a ? 1 : 0) }
}

/// Firebase key order (see ``ChildKey``).
public struct KeyOrder: SortOrder {
    public init() {}
    @inlinable public func compare(_ a: ChildKey, _ b: ChildKey) -> Int { ChildKey.compare(a, b) }
}
