public import Tree

/// What a listener can be told about a location.
public enum EventType: String, Sendable, Hashable, CaseIterable {
    case value
    case childAdded = "child_added"
    case childRemoved = "child_removed"
    case childChanged = "child_changed"
    case childMoved = "child_moved"
}

/// One change to a view's data, before it is delivered to listeners as an event.
public struct Change: Sendable, Equatable, CustomStringConvertible {
    public var type: EventType
    /// The new data (for `childRemoved`, the removed child's last data).
    public var node: Node
    /// The child concerned (`nil` for `value`).
    public var childName: ChildKey?
    /// The child's data before a `childChanged`.
    public var oldNode: Node?
    /// The key of the child before this one in the view's order, filled in by ``EventGenerator``.
    public var prevName: ChildKey?

    public init(type: EventType, node: Node, childName: ChildKey? = nil, oldNode: Node? = nil) {
        self.type = type
        self.node = node
        self.childName = childName
        self.oldNode = oldNode
    }

    public static func value(_ node: Node) -> Change { Change(type: .value, node: node) }
    public static func childAdded(_ name: ChildKey, _ node: Node) -> Change {
        Change(type: .childAdded, node: node, childName: name)
    }
    public static func childRemoved(_ name: ChildKey, _ node: Node) -> Change {
        Change(type: .childRemoved, node: node, childName: name)
    }
    public static func childChanged(_ name: ChildKey, _ node: Node, old: Node) -> Change {
        Change(type: .childChanged, node: node, childName: name, oldNode: old)
    }
    public static func childMoved(_ name: ChildKey, _ node: Node) -> Change {
        Change(type: .childMoved, node: node, childName: name)
    }

    public var description: String {
        var text = type.rawValue
        if let childName { text += " \(childName)" }
        if let prevName { text += " after \(prevName)" }
        return text + " = \(node)"
    }
}

/// Collects child changes during one operation, folding successive changes to the same child
/// (added then removed cancels out; removed then added becomes changed).
public struct ChildChangeAccumulator: Sendable {
    private var order: [ChildKey] = []
    private var changes: [ChildKey: Change] = [:]

    public init() {}

    public mutating func track(_ change: Change) {
        guard let key = change.childName else { preconditionFailure("only child changes are tracked") }
        guard let old = changes[key] else {
            order.append(key)
            changes[key] = change
            return
        }
        switch (change.type, old.type) {
        case (.childAdded, .childRemoved):
            changes[key] = .childChanged(key, change.node, old: old.node)
        case (.childRemoved, .childAdded):
            changes[key] = nil
        case (.childRemoved, .childChanged):
            changes[key] = .childRemoved(key, old.oldNode ?? old.node)
        case (.childChanged, .childAdded):
            changes[key] = .childAdded(key, change.node)
        case (.childChanged, .childChanged):
            changes[key] = .childChanged(key, change.node, old: old.oldNode ?? old.node)
        default:
            preconditionFailure("illegal change sequence: \(change) after \(old)")
        }
    }

    /// The folded changes, in the order their children were first touched.
    public var all: [Change] { order.compactMap { changes[$0] } }
}
