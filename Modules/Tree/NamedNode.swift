/// A child with its key: the unit that indexes sort and queries return.
public struct NamedNode: Sendable, Equatable, CustomStringConvertible {
    public var name: ChildKey
    public var node: Node

    public init(name: ChildKey, node: Node) {
        self.name = name
        self.node = node
    }

    /// Sorts before every child in every index.
    public static let min = NamedNode(name: .min, node: .empty)
    /// Sorts after every child in the key, priority and value indexes. Not in a child index, which
    /// reads the bound's child at its path (empty here): use ``Index/maxPost`` as the general bound.
    public static let max = NamedNode(name: .max, node: .maxSentinel)

    public var description: String { "\(name): \(node)" }
}
