public import Foundation
import Query
import Tree

/// The data at a location at one moment, as a listener or a read receives it. Immutable and cheap
/// to copy (it shares the tree it was taken from).
///
/// ```swift
/// let snapshot = try await Database.database().reference(withPath: "users/ada").getData()
/// snapshot.childSnapshot(forPath: "name").value as? String   // "Ada"
/// let user = try snapshot.data(as: User.self)
/// ```
public final class DataSnapshot: Sendable {
    /// Where the data is.
    public let ref: DatabaseReference
    let node: Node
    /// The query's ordering, for ``children``.
    let index: Index
    /// See ``SnapshotMetadata/isFromCache``.
    let isFromCache: Bool
    /// The pending writes at and below this location, relative to it (and what a write above it
    /// sets here), for ``SnapshotMetadata/hasPendingWrites``.
    let pendingWrites: CompoundWrite

    init(
        ref: DatabaseReference, node: Node, index: Index = .priority, isFromCache: Bool = false,
        pendingWrites: CompoundWrite = .empty
    ) {
        self.ref = ref
        self.node = node
        self.index = index
        self.isFromCache = isFromCache
        self.pendingWrites = pendingWrites
    }

    /// The last key of the location (`nil` at the root).
    public var key: String { ref.key ?? "" }

    /// The data as Swift values: `Bool`, numbers as `NSNumber` (castable to `Int`, `Double`,
    /// `TimeInterval` whenever exact), `String`, `[String: Any]`, `[Any]` for array-like objects,
    /// `nil` when there is no data.
    public var value: Any? { AppValue.value(node.json()) }

    /// Whether there is data here.
    public func exists() -> Bool { !node.isEmpty }

    /// Whether the data has children.
    public func hasChildren() -> Bool { node.childCount > 0 }

    /// How many children the data has.
    public var childrenCount: UInt { UInt(node.childCount) }

    /// Whether the child at `path` (a key or a slash-separated path) has data.
    public func hasChild(_ path: String) -> Bool {
        !node.child(at: Path(path)).isEmpty
    }

    /// The data at `path` below this one (an empty snapshot where there is none).
    public func childSnapshot(forPath path: String) -> DataSnapshot {
        child(ref: ref.child(path), at: Path(path), node: node.child(at: Path(path)))
    }

    /// The children, in the query's order (priority order for plain locations), as Firebase's
    /// `NSEnumerator` of `DataSnapshot`s.
    ///
    /// ```swift
    /// for case let child as DataSnapshot in snapshot.children { print(child.key) }
    /// let children = snapshot.children.allObjects as? [DataSnapshot] ?? []
    /// ```
    public var children: NSEnumerator {
        ChildEnumerator(
            node.children(in: index).map { named in
                child(ref: ref.child(named.name.string), at: Path(keys: [named.name]), node: named.node)
            })
    }

    /// The priority: a `String`, a number (`NSNumber`), or `nil`.
    public var priority: Any? { node.priority.flatMap { AppValue.value($0.leafValue.json) } }

    /// The data with priorities included (`.priority`, and `.value` for leaves that have one).
    public func valueInExportFormat() -> Any? { AppValue.value(node.json(exportFormat: true)) }

    /// The data decoded as `type` (Firebase's `data(as:decoder:)`); see ``Database/Decoder`` for
    /// the strategies. No data decodes as `nil` for an optional `type`, and throws
    /// `DecodingError.valueNotFound` otherwise.
    ///
    /// ```swift
    /// struct User: Codable { var name: String; var score: Int }
    /// let ada = try snapshot.data(as: User.self)
    /// ```
    public func data<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) throws -> T {
        try decoder.decode(type, fromJSON: node.json())
    }

    /// The data decoded as `type` by a `JSONDecoder` (through its JSON form).
    public func data<T: Decodable>(as type: T.Type, decoder: JSONDecoder) throws -> T {
        try decoder.decode(type, from: Data(node.json().serialized().utf8))
    }
}

extension DataSnapshot: CustomStringConvertible {
    public var description: String { "DataSnapshot(\(key)) \(node)" }
}
