public import Foundation
import Synchronization
import Tree

/// The data a transaction's update block reads and changes (Firebase's `MutableData`). Children
/// share the transaction's tree: changing `data.childData(byAppendingPath: "a").value` changes
/// `data.value`.
///
/// ```swift
/// ref.runTransactionBlock { data in
///     var post = data.value as? [String: Any] ?? [:]
///     post["stars"] = (post["stars"] as? Int ?? 0) + 1
///     data.value = post
///     return .success(withValue: data)
/// }
/// ```
public final class MutableData: Sendable {
    /// The whole tree the transaction works on, and the first invalid value set, if any.
    final class Root: Sendable {
        struct State {
            var node: Node
            var problem: DatabaseError?
        }
        let state: Mutex<State>
        init(_ node: Node) { state = Mutex(State(node: node)) }
        var node: Node { state.withLock { $0.node } }
        var problem: DatabaseError? { state.withLock { $0.problem } }
    }

    let root: Root
    let path: Path

    init(root: Root, path: Path = .root) {
        self.root = root
        self.path = path
    }

    convenience init(node: Node) { self.init(root: Root(node)) }

    private var node: Node { root.node.child(at: path) }

    /// The data here as Swift values (see ``DataSnapshot/value``); set it to replace the data
    /// (`nil` removes it). A value the database cannot store makes the transaction fail with
    /// ``DatabaseError/invalidValue(_:reason:)``.
    public var value: Any? {
        get { AppValue.value(node.json()) }
        set {
            let location = "/" + path.wireString
            do throws(DatabaseError) {
                let json = try AppValue.json(newValue, at: location)
                let replacement = try Self.node(json, at: location).withPriority(node.priority)
                root.state.withLock { $0.node = $0.node.updating(at: path, to: replacement) }
            } catch {
                root.state.withLock { $0.problem = $0.problem ?? error }
            }
        }
    }

    /// The priority here (`String`, a number, or `nil`); set it to change only the priority.
    public var priority: Any? {
        get { node.priority.flatMap { AppValue.value($0.leafValue.json) } }
        set {
            let location = "/" + path.wireString + "/.priority"
            do throws(DatabaseError) {
                let priority = try Self.node(try AppValue.json(newValue, at: location), at: location)
                root.state.withLock { state in
                    let current = state.node.child(at: path)
                    state.node = state.node.updating(
                        at: path, to: current.withPriority(priority.leafValue.flatMap(Priority.init(leaf:))))
                }
            } catch {
                root.state.withLock { $0.problem = $0.problem ?? error }
            }
        }
    }

    /// The last key of this location (`nil` for the transaction's own location).
    public var key: String? { path.back?.string }

    /// The data at `path` below this one. An invalid path (`"a.b"`, `"a/$x"`) makes the
    /// transaction fail with ``DatabaseError/invalidPath(_:reason:)``; what is set on the data
    /// returned for it is discarded.
    public func childData(byAppendingPath path: String) -> MutableData {
        do {
            return MutableData(root: root, path: self.path.child(try Path(validating: path)))
        } catch {
            let problem = Repo.databaseError(error, at: self.path)
            root.state.withLock { $0.problem = $0.problem ?? problem }
            return MutableData(root: Root(.empty))
        }
    }

    /// The children, in priority order, as Firebase's `NSEnumerator` of `MutableData`s.
    ///
    /// ```swift
    /// for case let child as MutableData in data.children { child.value = 0 }
    /// ```
    public var children: NSEnumerator {
        ChildEnumerator(node.children(in: .priority).map { MutableData(root: root, path: path.child($0.name)) })
    }

    /// How many children the data has.
    public var childrenCount: UInt { UInt(node.childCount) }

    /// Whether the data has children.
    public func hasChildren() -> Bool { node.childCount > 0 }

    /// Whether the child at `path` has data.
    public func hasChild(atPath path: String) -> Bool { !node.child(at: Path(path)).isEmpty }

    private static func node(_ json: JSONValue, at location: String) throws(DatabaseError) -> Node {
        do {
            return try Node(json: json)
        } catch {
            throw .invalidValue(location, reason: error.description)
        }
    }
}
