import Query
import Tree

/// One listen: a subscriber's interest in a query at a location.
struct Listener {
    let subscriber: any Subscriber
    let path: Path
    let queryID: String
    let params: QueryParams
    let tag: Int?
    /// Who listens, as the rules see it (updated when the connection authenticates again).
    var caller: Caller
    /// The server-side view of a filtered query (nil for queries that load all data).
    var view: View?
    /// Whether the rule that lets `caller` read this reads the data, so that a write may take the
    /// access away: such listens are checked again after each write.
    var dependsOnData = false
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

    /// Where each of a subscriber's listens is, so that its disconnect visits only its own.
    struct Registration: Hashable {
        let path: Path
        let queryID: String
    }

    private let root = Location()
    private var registrations: [Int: Set<Registration>] = [:]
    /// The registrations of the listeners that depend on the data (``Listener/dependsOnData``).
    private var dataDependent: [Int: Set<Registration>] = [:]
    private(set) var count = 0

    /// Whether some listener depends on the data (writes then check listens again).
    var hasDataDependent: Bool { !dataDependent.isEmpty }

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

    /// How many listens `subscriberID` has.
    func listenCount(of subscriberID: Int) -> Int {
        registrations[subscriberID]?.count ?? 0
    }

    /// Whether `subscriberID` listens at `path` for `queryID`.
    func contains(subscriberID: Int, path: Path, queryID: String) -> Bool {
        registrations[subscriberID]?.contains(Registration(path: path, queryID: queryID)) ?? false
    }

    /// Adds or replaces a listener; returns whether it is new.
    @discardableResult
    mutating func add(_ listener: Listener) -> Bool {
        guard let node = location(at: listener.path, create: true) else { return false }
        let key = ListenerKey(subscriberID: listener.subscriber.subscriberID, queryID: listener.queryID)
        let isNew = node.listeners.updateValue(listener, forKey: key) == nil
        let registration = Registration(path: listener.path, queryID: listener.queryID)
        if isNew {
            count += 1
            registrations[key.subscriberID, default: []].insert(registration)
        }
        if listener.dependsOnData {
            dataDependent[key.subscriberID, default: []].insert(registration)
        } else {
            Self.remove(registration, of: key.subscriberID, from: &dataDependent)
        }
        return isNew
    }

    private static func remove(
        _ registration: Registration, of subscriberID: Int, from index: inout [Int: Set<Registration>]
    ) {
        if index[subscriberID]?.remove(registration) != nil, index[subscriberID]?.isEmpty == true {
            index[subscriberID] = nil
        }
    }

    @discardableResult
    mutating func remove(subscriberID: Int, path: Path, queryID: String) -> Listener? {
        guard let node = location(at: path, create: false) else { return nil }
        let removed = node.listeners.removeValue(forKey: ListenerKey(subscriberID: subscriberID, queryID: queryID))
        if removed != nil {
            count -= 1
            prune(path)
            let registration = Registration(path: path, queryID: queryID)
            Self.remove(registration, of: subscriberID, from: &registrations)
            Self.remove(registration, of: subscriberID, from: &dataDependent)
        }
        return removed
    }

    /// Removes every listener of `subscriberID` (a connection closed), visiting only its own
    /// locations; returns how many there were.
    @discardableResult
    mutating func removeAll(subscriberID: Int) -> Int {
        dataDependent[subscriberID] = nil
        guard let own = registrations.removeValue(forKey: subscriberID) else { return 0 }
        for registration in own {
            guard let node = location(at: registration.path, create: false) else { continue }
            let key = ListenerKey(subscriberID: subscriberID, queryID: registration.queryID)
            if node.listeners.removeValue(forKey: key) != nil {
                count -= 1
                prune(registration.path)
            }
        }
        return own.count
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

    /// Visits every listener of `subscriberID` (none other is looked at).
    func forEach(of subscriberID: Int, _ body: (inout Listener) -> Void) {
        guard let own = registrations[subscriberID] else { return }
        for registration in own {
            guard let node = location(at: registration.path, create: false) else { continue }
            let key = ListenerKey(subscriberID: subscriberID, queryID: registration.queryID)
            if var listener = node.listeners[key] {
                body(&listener)
                node.listeners[key] = listener
            }
        }
    }

    /// The listeners that depend on the data (none other is looked at).
    func dataDependentListeners() -> [Listener] {
        var found: [Listener] = []
        for (subscriberID, own) in dataDependent {
            for registration in own {
                let key = ListenerKey(subscriberID: subscriberID, queryID: registration.queryID)
                if let listener = location(at: registration.path, create: false)?.listeners[key] {
                    found.append(listener)
                }
            }
        }
        return found
    }

    /// Every listener, with where it listens.
    func all() -> [Listener] {
        var found: [Listener] = []
        found.reserveCapacity(count)
        forEachAtOrAbove(.root) { _, listener in found.append(listener) }
        forEachBelow(.root) { _, listener in found.append(listener) }
        return found
    }

    /// Visits the listeners at locations containing `path` (root first, `path` itself last).
    func forEachAtOrAbove(_ path: Path, _ body: (Path, inout Listener) -> Void) {
        var node = root
        var depth = 0
        let keys = path.components
        while true {
            if !node.listeners.isEmpty {
                Self.forEachListener(in: node, at: Path(keys: keys.prefix(depth)), body)
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
                Self.forEachListener(in: child, at: childPath, body)
                visit(child, childPath)
            }
        }
        visit(start, path)
    }

    /// Visits a location's listeners in place: no listener is copied out and back, and the
    /// dictionary is not copied (index-based iteration holds no second reference to its storage).
    private static func forEachListener(in node: Location, at path: Path, _ body: (Path, inout Listener) -> Void) {
        var index = node.listeners.values.startIndex
        while index != node.listeners.values.endIndex {
            body(path, &node.listeners.values[index])
            node.listeners.values.formIndex(after: &index)
        }
    }
}
