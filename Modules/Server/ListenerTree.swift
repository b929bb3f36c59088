import Query
import Tree

/// One listen: a subscriber's interest in a query at a location.
struct Listener {
    let subscriber: any Subscriber
    let path: Path
    let queryID: String
    let params: QueryParams
    let tag: Int?
    /// The server-side view of a filtered query (nil for queries that load all data).
    var view: View?
}

/// Listeners by location, so that a write finds the listeners above, at and below it without
/// looking at the others.
struct ListenerTree {
    final class Location {
        var listeners: [ListenerKey: Listener] = [:]
        var children: [ChildKey: Location] = [:]
    }

    struct ListenerKey: Hashable {
        let subscriberID: Int
        let queryID: String
    }

    private let root = Location()
    private(set) var count = 0

    private func location(at path: Path, create: Bool) -> Location? {
        var node = root
        for key in path.components {
            if let child = node.children[key] {
                node = child
            } else if create {
                let child = Location()
                node.children[key] = child
                node = child
            } else {
                return nil
            }
        }
        return node
    }

    /// Adds or replaces a listener; returns whether it is new.
    @discardableResult
    mutating func add(_ listener: Listener) -> Bool {
        guard let node = location(at: listener.path, create: true) else { return false }
        let key = ListenerKey(subscriberID: listener.subscriber.subscriberID, queryID: listener.queryID)
        let isNew = node.listeners.updateValue(listener, forKey: key) == nil
        if isNew { count += 1 }
        return isNew
    }

    @discardableResult
    mutating func remove(subscriberID: Int, path: Path, queryID: String) -> Listener? {
        guard let node = location(at: path, create: false) else { return nil }
        let removed = node.listeners.removeValue(forKey: ListenerKey(subscriberID: subscriberID, queryID: queryID))
        if removed != nil {
            count -= 1
            prune(path)
        }
        return removed
    }

    /// Removes every listener of `subscriberID` (a connection closed); O(listeners).
    mutating func removeAll(subscriberID: Int) {
        func visit(_ node: Location) {
            let before = node.listeners.count
            node.listeners = node.listeners.filter { $0.key.subscriberID != subscriberID }
            count -= before - node.listeners.count
            for (key, child) in node.children {
                visit(child)
                if child.listeners.isEmpty, child.children.isEmpty { node.children[key] = nil }
            }
        }
        visit(root)
    }

    private func prune(_ path: Path) {
        var chain: [(Location, ChildKey)] = []
        var node = root
        for key in path.components {
            guard let child = node.children[key] else { return }
            chain.append((node, key))
            node = child
        }
        for (parent, key) in chain.reversed() {
            guard let child = parent.children[key], child.listeners.isEmpty, child.children.isEmpty else { return }
            parent.children[key] = nil
        }
    }

    /// Visits the listeners at locations containing `path` (root first, `path` itself last).
    func forEachAtOrAbove(_ path: Path, _ body: (Path, inout Listener) -> Void) {
        var node = root
        var depth = 0
        let keys = path.components
        while true {
            if !node.listeners.isEmpty {
                let here = Path(keys: keys.prefix(depth))
                for key in node.listeners.keys {
                    if var listener = node.listeners[key] { body(here, &listener); node.listeners[key] = listener }
                }
            }
            guard depth < keys.count, let child = node.children[keys[keys.startIndex + depth]] else { return }
            node = child
            depth += 1
        }
    }

    /// Whether some listener lies strictly below `path`.
    func hasListeners(below path: Path) -> Bool {
        guard count > 0, let start = location(at: path, create: false) else { return false }
        return !start.children.isEmpty
    }

    /// Visits the listeners strictly below `path`.
    func forEachBelow(_ path: Path, _ body: (Path, inout Listener) -> Void) {
        guard let start = location(at: path, create: false) else { return }
        func visit(_ node: Location, _ here: Path) {
            for (key, child) in node.children {
                let childPath = here.child(key)
                for listenerKey in child.listeners.keys {
                    if var listener = child.listeners[listenerKey] {
                        body(childPath, &listener)
                        child.listeners[listenerKey] = listener
                    }
                }
                visit(child, childPath)
            }
        }
        visit(start, path)
    }
}
