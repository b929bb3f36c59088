import Query
import Tree

/// The views at one location, one per distinct query, with their listeners.
struct SyncPoint: Sendable {
    struct Entry: Sendable {
        var query: QuerySpec
        var view: View
        var registrations: [EventRegistration]
    }

    /// In creation order, which is the order their events are raised in.
    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    func entryIndex(_ viewID: String) -> Int? { entries.firstIndex { $0.query.viewID == viewID } }

    mutating func apply(_ operation: Operation, writes: WriteTreeRef, completeServerCache: Node?) -> [Event] {
        if let queryID = operation.source.queryID {
            guard let index = entryIndex(queryID) else { return [] }
            return apply(operation, toEntry: index, writes: writes, completeServerCache: completeServerCache)
        }
        var events: [Event] = []
        for index in entries.indices {
            events += apply(operation, toEntry: index, writes: writes, completeServerCache: completeServerCache)
        }
        return events
    }

    private mutating func apply(
        _ operation: Operation, toEntry index: Int, writes: WriteTreeRef, completeServerCache: Node?
    ) -> [Event] {
        let changes = entries[index].view.apply(operation, writes: writes, completeServerCache: completeServerCache)
        return Self.events(for: changes, entry: entries[index], registrations: entries[index].registrations)
    }

    static func events(for changes: [Change], entry: Entry, registrations: [EventRegistration]) -> [Event] {
        var events: [Event] = []
        for change in changes {
            let path = change.childName.map { entry.query.path.child($0) } ?? entry.query.path
            for registration in registrations where registration.responds(to: change.type) {
                events.append(.data(registration: registration, path: path, change: change))
            }
        }
        return events
    }

    /// The view for `query`, existing or freshly built from the caches given.
    func view(for query: QuerySpec, writes: WriteTreeRef, serverCache: Node, serverCacheComplete: Bool) -> View {
        if let index = entryIndex(query.viewID) { return entries[index].view }
        var eventCache = writes.completeEventCache(serverCache: serverCacheComplete ? serverCache : nil)
        var eventCacheComplete = false
        if eventCache != nil {
            eventCacheComplete = true
        } else if !serverCache.isLeaf {
            eventCache = writes.completeEventChildren(serverChildren: serverCache)
        } else {
            eventCache = .empty
        }
        let cache = ViewCache(
            eventCache: CacheNode(
                node: eventCache ?? .empty, isFullyInitialized: eventCacheComplete, isFiltered: false),
            serverCache: CacheNode(node: serverCache, isFullyInitialized: serverCacheComplete, isFiltered: false))
        return View(params: query.params, initialCache: cache)
    }

    mutating func addRegistration(
        _ registration: EventRegistration, for query: QuerySpec, writes: WriteTreeRef, serverCache: Node,
        serverCacheComplete: Bool
    ) -> [Event] {
        let index: Int
        if let existing = entryIndex(query.viewID) {
            index = existing
        } else {
            let view = view(
                for: query, writes: writes, serverCache: serverCache, serverCacheComplete: serverCacheComplete)
            entries.append(Entry(query: query, view: view, registrations: []))
            index = entries.count - 1
        }
        entries[index].registrations.append(registration)
        return Self.events(
            for: entries[index].view.initialEvents(), entry: entries[index], registrations: [registration])
    }

    /// Removes `registration` (every registration when `nil`) from the views serving `query`
    /// (every view for the default query). Returns the queries whose views are gone (plus the
    /// location itself when its last complete view went), and cancel events when `cancelError` is set.
    mutating func removeRegistration(
        _ registration: EventRegistration?, for query: QuerySpec, cancelError: String?
    )
        -> (removed: [QuerySpec], events: [Event])
    {
        var removed: [QuerySpec] = []
        var events: [Event] = []
        let hadCompleteView = hasCompleteView
        let viewID = query.viewID
        var kept: [Entry] = []
        for var entry in entries {
            guard viewID == "default" || entry.query.viewID == viewID else {
                kept.append(entry)
                continue
            }
            if let cancelError {
                for existing in entry.registrations {
                    events.append(.cancel(registration: existing, path: entry.query.path, error: cancelError))
                }
            }
            if let registration {
                entry.registrations.removeAll { $0.id == registration.id }
            } else {
                entry.registrations.removeAll()
            }
            if entry.registrations.isEmpty {
                if !entry.query.params.loadsAllData { removed.append(entry.query) }
            } else {
                kept.append(entry)
            }
        }
        entries = kept
        if hadCompleteView, !hasCompleteView { removed.append(QuerySpec(path: query.path)) }
        return (removed, events)
    }

    /// Views of filtered queries (those that do not load all data).
    var queryViews: [Entry] { entries.filter { !$0.query.params.loadsAllData } }

    func completeServerCache(at path: Path) -> Node? {
        for entry in entries {
            if let cache = entry.view.completeServerCache(at: path) { return cache }
        }
        return nil
    }

    func entry(for query: QuerySpec) -> Entry? {
        if query.params.loadsAllData { return completeView }
        return entryIndex(query.viewID).map { entries[$0] }
    }

    var hasCompleteView: Bool { completeView != nil }
    var completeView: Entry? { entries.first { $0.query.params.loadsAllData } }
}
