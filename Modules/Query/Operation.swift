public import Tree

/// Where an operation on the sync engine's data came from.
public struct OperationSource: Sendable, Hashable {
    public var fromUser: Bool
    public var fromServer: Bool
    /// The tagged query a server update is addressed to, if any.
    public var queryID: String?
    public var tagged: Bool

    public static let user = OperationSource(fromUser: true, fromServer: false, queryID: nil, tagged: false)
    public static let server = OperationSource(fromUser: false, fromServer: true, queryID: nil, tagged: false)

    /// A server update for the filtered query `queryID`.
    public static func serverTaggedQuery(_ queryID: String) -> OperationSource {
        OperationSource(fromUser: false, fromServer: true, queryID: queryID, tagged: true)
    }
}

/// A change to apply to views: a write (local or from the server), an acknowledgement, or the
/// end of a listen's initial data.
public enum Operation: Sendable {
    /// Replace the data at `path`.
    case overwrite(source: OperationSource, path: Path, node: Node)
    /// Replace each location in `children` (relative to `path`).
    case merge(source: OperationSource, path: Path, children: ImmutableTree<Node>)
    /// The server confirmed (or, with `revert`, refused) a user write touching `affected` below `path`.
    case ackUserWrite(path: Path, affected: ImmutableTree<Bool>, revert: Bool)
    /// All data for a listen at `path` has arrived.
    case listenComplete(source: OperationSource, path: Path)

    public var path: Path {
        switch self {
        case .overwrite(_, let path, _), .merge(_, let path, _), .ackUserWrite(let path, _, _),
            .listenComplete(_, let path):
            path
        }
    }

    public var source: OperationSource {
        switch self {
        case .overwrite(let source, _, _), .merge(let source, _, _), .listenComplete(let source, _): source
        case .ackUserWrite: .user
        }
    }

    /// This operation as seen from child `key` of its location, or `nil` when it does not reach there.
    public func forChild(_ key: ChildKey) -> Operation? {
        switch self {
        case .overwrite(let source, let path, let node):
            if path.isEmpty { return .overwrite(source: source, path: .root, node: node.child(key)) }
            return .overwrite(source: source, path: path.popFront(), node: node)
        case .merge(let source, let path, let children):
            if path.isEmpty {
                let subtree = children.subtree(at: Path(keys: [key]))
                if subtree.isEmpty { return nil }
                if let value = subtree.value { return .overwrite(source: source, path: .root, node: value) }
                return .merge(source: source, path: .root, children: subtree)
            }
            return .merge(source: source, path: path.popFront(), children: children)
        case .ackUserWrite(let path, let affected, let revert):
            if !path.isEmpty { return .ackUserWrite(path: path.popFront(), affected: affected, revert: revert) }
            if affected.value != nil { return self }
            return .ackUserWrite(path: .root, affected: affected.subtree(at: Path(keys: [key])), revert: revert)
        case .listenComplete(let source, let path):
            return .listenComplete(source: source, path: path.isEmpty ? .root : path.popFront())
        }
    }
}
