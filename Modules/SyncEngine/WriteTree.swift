public import Query
public import Tree

/// A local write the server has not confirmed yet.
public struct WriteRecord: Sendable {
    public enum Kind: Sendable {
        /// `set`: replace the data at the path.
        case overwrite(Node)
        /// `update`: replace each child path (relative to the record's path).
        case merge([Path: Node])
    }

    public let writeID: Int
    public let path: Path
    public let kind: Kind
    /// Hidden writes (transactions not yet run) do not show in events until acknowledged.
    public let visible: Bool

    /// Whether this write touches `path` or a location below it.
    func touches(_ other: Path) -> Bool {
        switch kind {
        case .overwrite: path.contains(other)
        case .merge(let children): children.keys.contains { path.child($0).contains(other) }
        }
    }
}

/// The pending local writes, in the order they were made, and their combined effect.
///
/// Writes are added with increasing ids and removed when the server acknowledges (or rejects)
/// them; events are computed from server data with the visible writes layered on top.
public struct WriteTree: Sendable {
    /// Every pending write, oldest first.
    public private(set) var allWrites: [WriteRecord] = []
    /// The combined effect of the visible writes.
    public private(set) var visibleWrites = CompoundWrite()
    public private(set) var lastWriteID = -1

    public init() {}

    /// Adds `set(path, node)`; ids must increase.
    public mutating func addOverwrite(_ node: Node, at path: Path, writeID: Int, visible: Bool = true) {
        precondition(writeID > lastWriteID, "write \(writeID) stacked on newer write \(lastWriteID)")
        allWrites.append(WriteRecord(writeID: writeID, path: path, kind: .overwrite(node), visible: visible))
        if visible { visibleWrites = visibleWrites.adding(node, at: path) }
        lastWriteID = writeID
    }

    /// Adds `update(path, children)`; ids must increase.
    public mutating func addMerge(_ children: [Path: Node], at path: Path, writeID: Int) {
        precondition(writeID > lastWriteID, "merge \(writeID) stacked on newer write \(lastWriteID)")
        allWrites.append(WriteRecord(writeID: writeID, path: path, kind: .merge(children), visible: true))
        visibleWrites = visibleWrites.adding(children, at: path)
        lastWriteID = writeID
    }

    public func write(withID writeID: Int) -> WriteRecord? { allWrites.first { $0.writeID == writeID } }

    /// Removes a write; returns whether views must re-evaluate (the write was visible and not
    /// hidden under a later write).
    public mutating func removeWrite(withID writeID: Int) -> Bool {
        guard let index = allWrites.firstIndex(where: { $0.writeID == writeID }) else { return false }
        let removed = allWrites.remove(at: index)
        var wasVisible = removed.visible
        var overlapsOthers = false
        var position = allWrites.count - 1
        while wasVisible, position >= 0 {
            let current = allWrites[position]
            if current.visible {
                if position >= index, current.touches(removed.path) {
                    wasVisible = false
                } else if removed.path.contains(current.path) {
                    overlapsOthers = true
                }
            }
            position -= 1
        }
        if !wasVisible { return false }
        if overlapsOthers {
            visibleWrites = Self.layer(allWrites, at: .root) { $0.visible }
            lastWriteID = allWrites.last?.writeID ?? -1
            return true
        }
        switch removed.kind {
        case .overwrite:
            visibleWrites = visibleWrites.removing(at: removed.path)
        case .merge(let children):
            for childPath in children.keys { visibleWrites = visibleWrites.removing(at: removed.path.child(childPath)) }
        }
        return true
    }

    /// The writes selected by `include`, combined as seen from `root`.
    static func layer(_ writes: [WriteRecord], at root: Path, include: (WriteRecord) -> Bool) -> CompoundWrite {
        var result = CompoundWrite()
        for write in writes where include(write) {
            switch write.kind {
            case .overwrite(let node):
                if root.contains(write.path) {
                    result = result.adding(node, at: Path.relative(from: root, to: write.path))
                } else if write.path.contains(root) {
                    result = result.adding(node.child(at: Path.relative(from: write.path, to: root)), at: .root)
                }
            case .merge(let children):
                if root.contains(write.path) {
                    result = result.adding(children, at: Path.relative(from: root, to: write.path))
                } else if write.path.contains(root) {
                    let relative = Path.relative(from: write.path, to: root)
                    if relative.isEmpty {
                        result = result.adding(children, at: .root)
                    } else if let front = relative.front, let child = children[Path(keys: [front])] {
                        result = result.adding(child.child(at: relative.popFront()), at: .root)
                    }
                }
            }
        }
        return result
    }

    /// The data visible writes fully determine at `path`, if any.
    public func completeWriteData(at path: Path) -> Node? { visibleWrites.completeNode(at: path) }

    /// The event data at `treePath`: `completeServerCache` with pending writes applied.
    ///
    /// With `excluding` or `includeHiddenWrites`, the writes are re-layered from the write list
    /// (what transactions need to compute the data they run against).
    public func completeEventCache(
        at treePath: Path, serverCache: Node?, excluding writeIDsToExclude: [Int]? = nil,
        includeHiddenWrites: Bool = false
    ) -> Node? {
        if writeIDsToExclude == nil, !includeHiddenWrites {
            if let shadowing = visibleWrites.completeNode(at: treePath) { return shadowing }
            let subMerge = visibleWrites.childWrite(at: treePath)
            if subMerge.isEmpty { return serverCache }
            if serverCache == nil, !subMerge.hasCompleteWrite(at: .root) { return nil }
            return subMerge.apply(to: serverCache ?? .empty)
        }
        let merge = visibleWrites.childWrite(at: treePath)
        if !includeHiddenWrites, merge.isEmpty { return serverCache }
        if !includeHiddenWrites, serverCache == nil, !merge.hasCompleteWrite(at: .root) { return nil }
        let excluded = Set(writeIDsToExclude ?? [])
        let layered = Self.layer(allWrites, at: treePath) { write in
            (write.visible || includeHiddenWrites) && !excluded.contains(write.writeID)
                && (write.path.contains(treePath) || treePath.contains(write.path))
        }
        return layered.apply(to: serverCache ?? .empty)
    }

    func completeEventChildren(at treePath: Path, serverChildren: Node?) -> Node {
        var result = Node.empty
        if let topLevelSet = visibleWrites.completeNode(at: treePath) {
            if !topLevelSet.isLeaf {
                for child in topLevelSet.children(in: .priority) {
                    result = result.updatingChild(child.name, to: child.node)
                }
            }
            return result
        }
        let merge = visibleWrites.childWrite(at: treePath)
        if let serverChildren {
            for child in serverChildren.children(in: .priority) {
                let node = merge.childWrite(at: Path(keys: [child.name])).apply(to: child.node)
                result = result.updatingChild(child.name, to: node)
            }
        }
        for child in merge.completeChildren { result = result.updatingChild(child.name, to: child.node) }
        return result
    }

    func eventCacheAfterServerOverwrite(
        at treePath: Path, childPath: Path, eventCache: Node?, serverCache: Node?
    ) -> Node? {
        let path = treePath.child(childPath)
        if visibleWrites.hasCompleteWrite(at: path) { return nil }
        let childMerge = visibleWrites.childWrite(at: path)
        let existing = (serverCache ?? .empty).child(at: childPath)
        return childMerge.isEmpty ? existing : childMerge.apply(to: existing)
    }

    func completeChild(at treePath: Path, key: ChildKey, serverCache: CacheNode) -> Node? {
        let path = treePath.child(key)
        if let shadowing = visibleWrites.completeNode(at: path) { return shadowing }
        guard serverCache.isComplete(forChild: key) else { return nil }
        return visibleWrites.childWrite(at: path).apply(to: serverCache.node.child(key))
    }

    func indexedSlice(
        at treePath: Path, completeServerData: Node?, start: NamedNode, count: Int, reverse: Bool, index: Index
    ) -> [NamedNode] {
        let merge = visibleWrites.childWrite(at: treePath)
        let toIterate: Node
        if let shadowing = merge.completeNode(at: .root) {
            toIterate = shadowing
        } else if let completeServerData {
            toIterate = merge.apply(to: completeServerData)
        } else {
            return []
        }
        var result: [NamedNode] = []
        for child in toIterate.children(in: index, from: start, reverse: reverse) {
            if result.count == count { break }
            if index.compare(child, start) != 0 { result.append(child) }
        }
        return result
    }
}

/// The pending writes as seen from one location (``PendingWrites`` for that location's views).
public struct WriteTreeRef: PendingWrites {
    public let path: Path
    let tree: WriteTree

    public init(path: Path, tree: WriteTree) {
        self.path = path
        self.tree = tree
    }

    public func child(_ key: ChildKey) -> WriteTreeRef { WriteTreeRef(path: path.child(key), tree: tree) }

    public func shadowingWrite(at relative: Path) -> Node? { tree.completeWriteData(at: path.child(relative)) }

    public func completeEventCache(serverCache: Node?) -> Node? {
        tree.completeEventCache(at: path, serverCache: serverCache)
    }

    public func completeEventChildren(serverChildren: Node) -> Node {
        tree.completeEventChildren(at: path, serverChildren: serverChildren)
    }

    public func eventCacheAfterServerOverwrite(childPath: Path, eventCache: Node?, serverCache: Node?) -> Node? {
        tree.eventCacheAfterServerOverwrite(
            at: path, childPath: childPath, eventCache: eventCache, serverCache: serverCache)
    }

    public func completeChild(_ key: ChildKey, serverCache: CacheNode) -> Node? {
        tree.completeChild(at: path, key: key, serverCache: serverCache)
    }

    public func indexedSlice(
        completeServerData: Node?, start: NamedNode, count: Int, reverse: Bool, index: Index
    )
        -> [NamedNode]
    {
        tree.indexedSlice(
            at: path, completeServerData: completeServerData, start: start, count: count, reverse: reverse, index: index
        )
    }
}
