public import Tree

/// Applies operations to a view's caches and works out which child changes listeners must see.
public struct ViewProcessor: Sendable {
    public let filter: any NodeFilter

    public init(filter: any NodeFilter) { self.filter = filter }

    /// The new caches after `operation`, and the changes it raised (ending with a `value` change
    /// when the view's data is complete and changed).
    public func apply(
        _ operation: Operation, to oldCache: ViewCache, writes: any PendingWrites, completeCache: Node?
    ) -> (cache: ViewCache, changes: [Change]) {
        var accumulator: ChildChangeAccumulator? = ChildChangeAccumulator()
        let newCache: ViewCache
        switch operation {
        case .overwrite(let source, let path, let node):
            if source.fromUser {
                newCache = applyUserOverwrite(oldCache, path, node, writes, completeCache, &accumulator)
            } else {
                let filterServerNode = source.tagged || (oldCache.serverCache.isFiltered && !path.isEmpty)
                newCache = applyServerOverwrite(
                    oldCache, path, node, writes, completeCache, filterServerNode, &accumulator)
            }
        case .merge(let source, let path, let children):
            if source.fromUser {
                newCache = applyUserMerge(oldCache, path, children, writes, completeCache, &accumulator)
            } else {
                let filterServerNode = source.tagged || oldCache.serverCache.isFiltered
                newCache = applyServerMerge(
                    oldCache, path, children, writes, completeCache, filterServerNode, &accumulator)
            }
        case .ackUserWrite(let path, let affected, let revert):
            if revert {
                newCache = revertUserWrite(oldCache, path, writes, completeCache, &accumulator)
            } else {
                newCache = ackUserWrite(oldCache, path, affected, writes, completeCache, &accumulator)
            }
        case .listenComplete(_, let path):
            newCache = listenComplete(oldCache, path, writes, &accumulator)
        }
        var changes = accumulator?.all ?? []
        Self.addValueChange(old: oldCache, new: newCache, to: &changes)
        return (newCache, changes)
    }

    private static func addValueChange(old: ViewCache, new: ViewCache, to changes: inout [Change]) {
        let eventCache = new.eventCache
        guard eventCache.isFullyInitialized else { return }
        let isLeafOrEmpty = eventCache.node.isLeaf || eventCache.node.isEmpty
        let oldComplete = old.completeEventNode ?? .empty
        if !changes.isEmpty || !old.eventCache.isFullyInitialized
            || (isLeafOrEmpty && eventCache.node != oldComplete)
            || eventCache.node.priority != oldComplete.priority
        {
            changes.append(.value(new.completeEventNode ?? .empty))
        }
    }

    private func eventCacheAfterServerEvent(
        _ viewCache: ViewCache, _ changePath: Path, _ writes: any PendingWrites, _ source: any CompleteChildSource,
        _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        let oldEventSnap = viewCache.eventCache
        if writes.shadowingWrite(at: changePath) != nil { return viewCache }
        let newEventCache: Node
        if let childKey = changePath.front {
            if childKey.isPriorityKey {
                let updatedPriority = writes.eventCacheAfterServerOverwrite(
                    childPath: changePath, eventCache: oldEventSnap.node, serverCache: viewCache.serverCache.node)
                if let updatedPriority {
                    newEventCache = filter.updatePriority(oldEventSnap.node, updatedPriority)
                } else {
                    newEventCache = oldEventSnap.node
                }
            } else {
                let childChangePath = changePath.popFront()
                let newEventChild: Node?
                if oldEventSnap.isComplete(forChild: childKey) {
                    let update = writes.eventCacheAfterServerOverwrite(
                        childPath: changePath, eventCache: oldEventSnap.node, serverCache: viewCache.serverCache.node)
                    if let update {
                        newEventChild = oldEventSnap.node.child(childKey).updating(at: childChangePath, to: update)
                    } else {
                        newEventChild = oldEventSnap.node.child(childKey)
                    }
                } else {
                    newEventChild = writes.completeChild(childKey, serverCache: viewCache.serverCache)
                }
                if let newEventChild {
                    newEventCache = filter.updateChild(
                        oldEventSnap.node, key: childKey, newChild: newEventChild, affectedPath: childChangePath,
                        source: source, accumulator: &accumulator)
                } else {
                    newEventCache = oldEventSnap.node
                }
            }
        } else {
            if viewCache.serverCache.isFiltered {
                let serverCache = viewCache.completeServerNode ?? .empty
                let completeChildren = serverCache.isLeaf ? Node.empty : serverCache
                let completeEventChildren = writes.completeEventChildren(serverChildren: completeChildren)
                newEventCache = filter.updateFullNode(
                    viewCache.eventCache.node, completeEventChildren, accumulator: &accumulator)
            } else {
                let completeNode = writes.completeEventCache(serverCache: viewCache.completeServerNode) ?? .empty
                newEventCache = filter.updateFullNode(
                    viewCache.eventCache.node, completeNode, accumulator: &accumulator)
            }
        }
        return viewCache.updatingEventCache(
            newEventCache, complete: oldEventSnap.isFullyInitialized || changePath.isEmpty,
            filtered: filter.filtersNodes)
    }

    private func applyServerOverwrite(
        _ oldViewCache: ViewCache, _ changePath: Path, _ changedSnap: Node, _ writes: any PendingWrites,
        _ completeCache: Node?, _ filterServerNode: Bool, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        let oldServerSnap = oldViewCache.serverCache
        let serverFilter: any NodeFilter = filterServerNode ? filter : filter.indexedFilter
        var noAccumulator: ChildChangeAccumulator?
        let newServerCache: Node
        if changePath.isEmpty {
            newServerCache = serverFilter.updateFullNode(oldServerSnap.node, changedSnap, accumulator: &noAccumulator)
        } else if serverFilter.filtersNodes, !oldServerSnap.isFiltered {
            let newServerNode = oldServerSnap.node.updating(at: changePath, to: changedSnap)
            newServerCache = serverFilter.updateFullNode(oldServerSnap.node, newServerNode, accumulator: &noAccumulator)
        } else {
            guard let childKey = changePath.front else { preconditionFailure("non-empty path has a front") }
            if !oldServerSnap.isComplete(at: changePath), changePath.count > 1 { return oldViewCache }
            let childChangePath = changePath.popFront()
            let newChildNode = oldServerSnap.node.child(childKey).updating(at: childChangePath, to: changedSnap)
            if childKey.isPriorityKey {
                newServerCache = serverFilter.updatePriority(oldServerSnap.node, newChildNode)
            } else {
                newServerCache = serverFilter.updateChild(
                    oldServerSnap.node, key: childKey, newChild: newChildNode, affectedPath: childChangePath,
                    source: NoCompleteChildSource(), accumulator: &noAccumulator)
            }
        }
        let newViewCache = oldViewCache.updatingServerCache(
            newServerCache, complete: oldServerSnap.isFullyInitialized || changePath.isEmpty,
            filtered: serverFilter.filtersNodes)
        let source = WriteTreeCompleteChildSource(
            writes: writes, viewCache: newViewCache, completeServerCache: completeCache)
        return eventCacheAfterServerEvent(newViewCache, changePath, writes, source, &accumulator)
    }

    private func applyUserOverwrite(
        _ oldViewCache: ViewCache, _ changePath: Path, _ changedSnap: Node, _ writes: any PendingWrites,
        _ completeCache: Node?, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        let oldEventSnap = oldViewCache.eventCache
        let source = WriteTreeCompleteChildSource(
            writes: writes, viewCache: oldViewCache, completeServerCache: completeCache)
        guard let childKey = changePath.front else {
            let newEventCache = filter.updateFullNode(oldEventSnap.node, changedSnap, accumulator: &accumulator)
            return oldViewCache.updatingEventCache(newEventCache, complete: true, filtered: filter.filtersNodes)
        }
        if childKey.isPriorityKey {
            let newEventCache = filter.updatePriority(oldEventSnap.node, changedSnap)
            return oldViewCache.updatingEventCache(
                newEventCache, complete: oldEventSnap.isFullyInitialized, filtered: oldEventSnap.isFiltered)
        }
        let childChangePath = changePath.popFront()
        let oldChild = oldEventSnap.node.child(childKey)
        let newChild: Node
        if childChangePath.isEmpty {
            newChild = changedSnap
        } else if let childNode = source.completeChild(childKey) {
            if childChangePath.back?.isPriorityKey == true,
                let parent = childChangePath.parent, childNode.child(at: parent).isEmpty
            {
                newChild = childNode
            } else {
                newChild = childNode.updating(at: childChangePath, to: changedSnap)
            }
        } else {
            newChild = .empty
        }
        if oldChild == newChild { return oldViewCache }
        let newEventSnap = filter.updateChild(
            oldEventSnap.node, key: childKey, newChild: newChild, affectedPath: childChangePath, source: source,
            accumulator: &accumulator)
        return oldViewCache.updatingEventCache(
            newEventSnap, complete: oldEventSnap.isFullyInitialized, filtered: filter.filtersNodes)
    }

    private func applyUserMerge(
        _ viewCache: ViewCache, _ path: Path, _ changedChildren: ImmutableTree<Node>, _ writes: any PendingWrites,
        _ serverCache: Node?, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        var current = viewCache
        // Children already cached go first, so that refills of a limited window see them.
        for cachedFirst in [true, false] {
            changedChildren.forEach { relativePath, childNode in
                let writePath = path.child(relativePath)
                guard let front = writePath.front else { return }
                if viewCache.eventCache.isComplete(forChild: front) == cachedFirst {
                    current = applyUserOverwrite(current, writePath, childNode, writes, serverCache, &accumulator)
                }
            }
        }
        return current
    }

    private static func applyMerge(_ node: Node, _ merge: ImmutableTree<Node>) -> Node {
        var result = node
        merge.forEach { relativePath, childNode in result = result.updating(at: relativePath, to: childNode) }
        return result
    }

    private func applyServerMerge(
        _ viewCache: ViewCache, _ path: Path, _ changedChildren: ImmutableTree<Node>, _ writes: any PendingWrites,
        _ serverCache: Node?, _ filterServerNode: Bool, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        if viewCache.serverCache.node.isEmpty, !viewCache.serverCache.isFullyInitialized { return viewCache }
        var current = viewCache
        let mergeTree = path.isEmpty ? changedChildren : ImmutableTree().setting(tree: changedChildren, at: path)
        let serverNode = viewCache.serverCache.node
        for (childKey, childTree) in mergeTree.children where serverNode.hasChild(childKey) {
            let newChild = Self.applyMerge(serverNode.child(childKey), childTree)
            current = applyServerOverwrite(
                current, Path(keys: [childKey]), newChild, writes, serverCache, filterServerNode, &accumulator)
        }
        for (childKey, childTree) in mergeTree.children where !serverNode.hasChild(childKey) {
            let isUnknownDeepMerge = !viewCache.serverCache.isComplete(forChild: childKey) && childTree.value == nil
            if isUnknownDeepMerge { continue }
            let newChild = Self.applyMerge(serverNode.child(childKey), childTree)
            current = applyServerOverwrite(
                current, Path(keys: [childKey]), newChild, writes, serverCache, filterServerNode, &accumulator)
        }
        return current
    }

    private func ackUserWrite(
        _ viewCache: ViewCache, _ ackPath: Path, _ affected: ImmutableTree<Bool>, _ writes: any PendingWrites,
        _ completeCache: Node?, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        if writes.shadowingWrite(at: ackPath) != nil { return viewCache }
        let filterServerNode = viewCache.serverCache.isFiltered
        let serverCache = viewCache.serverCache
        if affected.value != nil {
            if (ackPath.isEmpty && serverCache.isFullyInitialized) || serverCache.isComplete(at: ackPath) {
                return applyServerOverwrite(
                    viewCache, ackPath, serverCache.node.child(at: ackPath), writes, completeCache, filterServerNode,
                    &accumulator)
            }
            if ackPath.isEmpty {
                var changedChildren = ImmutableTree<Node>()
                for (name, node) in serverCache.node.children {
                    changedChildren = changedChildren.setting(node, at: Path(keys: [name]))
                }
                return applyServerMerge(
                    viewCache, ackPath, changedChildren, writes, completeCache, filterServerNode, &accumulator)
            }
            return viewCache
        }
        var changedChildren = ImmutableTree<Node>()
        affected.forEach { mergePath, _ in
            let serverCachePath = ackPath.child(mergePath)
            if serverCache.isComplete(at: serverCachePath) {
                changedChildren = changedChildren.setting(serverCache.node.child(at: serverCachePath), at: mergePath)
            }
        }
        return applyServerMerge(
            viewCache, ackPath, changedChildren, writes, completeCache, filterServerNode, &accumulator)
    }

    private func listenComplete(
        _ viewCache: ViewCache, _ path: Path, _ writes: any PendingWrites, _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        let oldServerNode = viewCache.serverCache
        let newViewCache = viewCache.updatingServerCache(
            oldServerNode.node, complete: oldServerNode.isFullyInitialized || path.isEmpty,
            filtered: oldServerNode.isFiltered)
        return eventCacheAfterServerEvent(newViewCache, path, writes, NoCompleteChildSource(), &accumulator)
    }

    private func revertUserWrite(
        _ viewCache: ViewCache, _ path: Path, _ writes: any PendingWrites, _ completeServerCache: Node?,
        _ accumulator: inout ChildChangeAccumulator?
    ) -> ViewCache {
        // A write may still cover `path`: never a later one (reverting a hidden write changes no view),
        // but an earlier one still pending, whose data must show again.
        let source = WriteTreeCompleteChildSource(
            writes: writes, viewCache: viewCache, completeServerCache: completeServerCache)
        let oldEventCache = viewCache.eventCache.node
        var newEventCache: Node
        if let childKey = path.front, !childKey.isPriorityKey {
            var newChild = writes.completeChild(childKey, serverCache: viewCache.serverCache)
            if newChild == nil, viewCache.serverCache.isComplete(forChild: childKey) {
                newChild = oldEventCache.child(childKey)
            }
            if let newChild {
                newEventCache = filter.updateChild(
                    oldEventCache, key: childKey, newChild: newChild, affectedPath: path.popFront(), source: source,
                    accumulator: &accumulator)
            } else if viewCache.eventCache.node.hasChild(childKey) {
                newEventCache = filter.updateChild(
                    oldEventCache, key: childKey, newChild: .empty, affectedPath: path.popFront(), source: source,
                    accumulator: &accumulator)
            } else {
                newEventCache = oldEventCache
            }
            if newEventCache.isEmpty, viewCache.serverCache.isFullyInitialized {
                let complete = writes.completeEventCache(serverCache: viewCache.completeServerNode) ?? .empty
                if complete.isLeaf {
                    newEventCache = filter.updateFullNode(newEventCache, complete, accumulator: &accumulator)
                }
            }
        } else {
            let newNode: Node
            if viewCache.serverCache.isFullyInitialized {
                newNode = writes.completeEventCache(serverCache: viewCache.completeServerNode) ?? .empty
            } else {
                newNode = writes.completeEventChildren(serverChildren: viewCache.serverCache.node)
            }
            newEventCache = filter.updateFullNode(oldEventCache, newNode, accumulator: &accumulator)
        }
        let complete = viewCache.serverCache.isFullyInitialized || writes.shadowingWrite(at: .root) != nil
        return viewCache.updatingEventCache(newEventCache, complete: complete, filtered: filter.filtersNodes)
    }
}
