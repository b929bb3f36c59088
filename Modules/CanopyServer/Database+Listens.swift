import Prometheus
import Query
import Tree

extension Database {
    /// Registers a listen, delivers its initial data to `subscriber`, then calls `reply` with the
    /// warnings for its answer (`no_index`). Returns `false`, registering nothing and never calling
    /// `reply`, when the rules do not let `caller` read it.
    ///
    /// Plain listens get the data at `path`; filtered queries get their window, tagged, and keep a
    /// server-side ``View`` so later writes push only what entered, changed in or left the window.
    ///
    /// The initial data is a snapshot of memory, which holds writes that may not be durable yet, so
    /// it is delivered in commit order (``deliverInCommitOrder(_:to:then:)``): after the updates of
    /// the writes it includes, which the subscriber may also get through another of its listens,
    /// and before those of every later write.
    @discardableResult
    func listen(
        _ subscriber: any Subscriber, path: Path, params: QueryParams, queryID: String, tag: Int?, hash: String?,
        caller: Caller, reply: @escaping @Sendable ([String]) -> Void = { _ in }
    ) -> Bool {
        let access = readAccess(path, params: params, caller: caller, refusal: .listen)
        guard case .allowed(let dependsOnData) = access else { return false }
        let data = root.child(at: path)
        var warnings: [String] = []
        if case .child(let child) = params.index, !indexedChildren(at: path).contains(child.wireString) {
            warnings.append("no_index")
        }
        var listener = Listener(
            subscriber: subscriber, path: path, queryID: queryID, params: params, tag: tag, caller: caller, view: nil,
            dependsOnData: dependsOnData)
        let push: Push?
        if params.loadsAllData {
            // Skip resending data the client already holds; hash only when it sent one.
            let clientHasIt = hash.map { !$0.isEmpty && $0 == data.hash } ?? false
            push = clientHasIt ? nil : Push(kind: .overwrite, path: path, data: data.json(exportFormat: true), tag: tag)
        } else {
            let complete = CacheNode(node: data, isFullyInitialized: true, isFiltered: false)
            let (view, window) = IndexRetention.$current.withValue(indexRetention) {
                let view = View(params: params, initialCache: ViewCache(eventCache: complete, serverCache: complete))
                return (view, view.completeEventNode ?? .empty)
            }
            listener.view = view
            push = Push(kind: .overwrite, path: path, data: window.json(exportFormat: true), tag: tag)
        }
        if listeners.add(listener) { metrics.listeners.increment() }
        deliverInCommitOrder(push, to: subscriber) { [warnings] in reply(warnings) }
        return true
    }

    /// Whether one more listen of `subscriberID`, at `path` for `queryID`, would make more than
    /// `limit` (a listen replacing one of its own is not one more).
    func wouldExceedListens(of subscriberID: Int, path: Path, queryID: String, limit: Int) -> Bool {
        listeners.listenCount(of: subscriberID) >= limit
            && !listeners.contains(subscriberID: subscriberID, path: path, queryID: queryID)
    }

    func unlisten(subscriberID: Int, path: Path, queryID: String) {
        if listeners.remove(subscriberID: subscriberID, path: path, queryID: queryID) != nil {
            metrics.listeners.decrement()
        }
    }

    /// Drops every listen of a subscriber that went away.
    func removeSubscriber(_ subscriberID: Int) {
        let before = listeners.count
        listeners.removeAll(subscriberID: subscriberID)
        metrics.listeners.decrement(by: Double(before - listeners.count))
    }

    /// The data a one-shot read of `params` at `path` returns (the query applied on the server);
    /// `nil` when the rules do not let `caller` read it.
    func read(_ path: Path, params: QueryParams, caller: Caller) -> Node? {
        guard mayRead(path, params: params, caller: caller) else { return nil }
        let data = root.child(at: path)
        if params.loadsAllData { return data }
        return IndexRetention.$current.withValue(indexRetention) {
            var none: ChildChangeAccumulator?
            return params.nodeFilter.updateFullNode(.empty, data, accumulator: &none)
        }
    }

    /// The pushes a write at `path` (from `old` to `new`) causes, per subscriber, in order.
    func fanOut(at path: Path, old: Node, new: Node, merge: [(path: Path, node: Node)]?) -> [(any Subscriber, Push)] {
        guard listeners.count > 0 else { return [] }
        var deliveries: [(any Subscriber, Push)] = []
        // Computed on first use: most writes have no listener at or above their location.
        var writtenNode: Node?
        func written() -> Node {
            if let writtenNode { return writtenNode }
            let node = new.child(at: path)
            writtenNode = node
            return node
        }
        var shared: Push?
        var builtOperation: Operation?
        func operation() -> Operation {
            if let builtOperation { return builtOperation }
            let operation: Operation
            if let merge {
                var tree = ImmutableTree<Node>()
                for (relative, node) in merge { tree = tree.setting(node, at: relative) }
                operation = .merge(source: .server, path: path, children: tree)
            } else {
                operation = .overwrite(source: .server, path: path, node: written())
            }
            builtOperation = operation
            return operation
        }
        listeners.forEachAtOrAbove(path) { location, listener in
            if listener.view != nil {
                let relative = Path.relative(from: location, to: path)
                if let push = Self.queryPush(&listener, operation: Self.rebase(operation(), to: relative)) {
                    deliveries.append((listener.subscriber, push))
                }
                return
            }
            if shared == nil {
                if let merge {
                    var members: [String: JSONValue] = [:]
                    for (relative, node) in merge { members[relative.wireString] = node.json(exportFormat: true) }
                    shared = Push(kind: .merge, path: path, data: .object(members), tag: nil)
                } else {
                    shared = Push(kind: .overwrite, path: path, data: written().json(exportFormat: true), tag: nil)
                }
            }
            if let shared {
                deliveries.append(
                    (
                        listener.subscriber,
                        listener.tag == nil
                            ? shared : Push(kind: shared.kind, path: shared.path, data: shared.data, tag: listener.tag)
                    ))
            }
        }
        var below: [Path: (changed: Bool, push: Push?)] = [:]
        listeners.forEachBelow(path) { location, listener in
            var entry = below[location] ?? (changed: old.child(at: location) != new.child(at: location), push: nil)
            defer { below[location] = entry }
            guard entry.changed else { return }
            let value = new.child(at: location)
            if listener.view != nil {
                if let push = Self.queryPush(
                    &listener, operation: .overwrite(source: .server, path: .root, node: value))
                {
                    deliveries.append((listener.subscriber, push))
                }
                return
            }
            if entry.push == nil {
                entry.push = Push(kind: .overwrite, path: location, data: value.json(exportFormat: true), tag: nil)
            }
            if let push = entry.push {
                deliveries.append(
                    (
                        listener.subscriber,
                        listener.tag == nil
                            ? push : Push(kind: .overwrite, path: location, data: push.data, tag: listener.tag)
                    ))
            }
        }
        return deliveries
    }

    /// `operation` (at an absolute path) as seen from a listener `relative` levels above it.
    private static func rebase(_ operation: Operation, to relative: Path) -> Operation {
        switch operation {
        case .overwrite(let source, _, let node): .overwrite(source: source, path: relative, node: node)
        case .merge(let source, _, let children): .merge(source: source, path: relative, children: children)
        default: operation
        }
    }

    /// Applies an operation to a filtered listener's view; returns the tagged push for what changed.
    private static func queryPush(_ listener: inout Listener, operation: Operation) -> Push? {
        guard var view = listener.view else { return nil }
        let changes = view.apply(operation, writes: NoPendingWrites(), completeServerCache: nil)
        listener.view = view
        var members: [String: JSONValue] = [:]
        var valueChanged = false
        for change in changes {
            switch change.type {
            case .childAdded, .childChanged, .childMoved:
                if let name = change.childName { members[name.string] = change.node.json(exportFormat: true) }
            case .childRemoved:
                if let name = change.childName { members[name.string] = .null }
            case .value:
                valueChanged = true
            }
        }
        if !members.isEmpty {
            return Push(kind: .merge, path: listener.path, data: .object(members), tag: listener.tag)
        }
        guard valueChanged else { return nil }
        let window = view.completeEventNode ?? .empty
        return Push(kind: .overwrite, path: listener.path, data: window.json(exportFormat: true), tag: listener.tag)
    }
}
