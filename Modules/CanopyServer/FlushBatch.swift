import NIOCore
import NIOWebSocket
import Synchronization

/// The outbound messages of the realtime connections of one event loop, queued from any thread in
/// one ordered inbox, handed to their connections and written by one task on that loop.
///
/// A write fanned out to a thousand listeners is one entry per loop here (``submit(frames:to:)``),
/// under a lock the loop takes once per run. Queueing it in each connection's own queue took a
/// thousand locks whose memory the loop had just used to write those connections' previous
/// messages: at a million events a second, 15 % of the server's CPU went to those locks. One inbox
/// per loop also keeps each connection's messages in the order they were queued, as all of them go
/// through the inbox of its loop.
final class FlushBatch: Sendable {
    private let eventLoop: any EventLoop
    private let inbox = Mutex(Inbox())

    /// What a connection is handed.
    enum Item: Sendable {
        case message(OutboundMessage)
        /// Close the WebSocket with this code after what was queued before; drop what comes after.
        /// `awaitingPeer`: see ``RealtimeConnection/closeAfterPendingMessages(code:awaitingPeer:)``.
        case close(WebSocketErrorCode, awaitingPeer: Bool)
    }

    private enum Entry {
        case one(RealtimeConnection, Item)
        /// One push's frames for each of the connections.
        case push(ByteBuffer, PushTargets)
    }

    /// The connections of this loop a push goes to, held by the deliveries they came from rather
    /// than each retained: a connection retained and released for every push, by the thread that
    /// hands it over and then by the loop, made each of them wait for the memory the other had just
    /// changed.
    struct PushTargets: Sendable {
        /// Holds every connection of `connections` until the loop has handed them the push.
        let deliveries: [(any Subscriber, Push)]
        let connections: [Unmanaged<RealtimeConnection>]
    }

    private struct Inbox {
        var entries: [Entry] = []
        /// The storage of the entries of the last run, reused for the next one (up to
        /// ``FlushBatch/spareEntries`` entries).
        var spare: [Entry] = []
        var scheduled = false
    }

    /// The most entries whose storage is kept for the next run (a fanned-out push is one entry).
    static let spareEntries = 1024

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Queues `item` for `connection` (a connection of this loop), after everything queued before.
    func submit(_ connection: RealtimeConnection, _ item: consuming Item) {
        append(.one(connection, item))
    }

    /// Queues a push's `frames` for each of the `targets` (connections of this loop), in one entry.
    ///
    /// The frames should be this loop's own copy: every connection's write retains and releases
    /// their storage, and a storage two loops share makes each of those wait for the other loop.
    func submit(frames: ByteBuffer, to targets: PushTargets) {
        append(.push(frames, targets))
    }

    private func append(_ entry: consuming Entry) {
        // Moved into the inbox, not copied: a copy is a retain of what it holds, released again
        // at once from this thread while the loop may be using the same memory.
        var entry = Optional(entry)
        let start = inbox.withLock { inbox -> Bool in
            guard let entry = entry.take() else { return false }
            inbox.entries.append(entry)
            if inbox.scheduled { return false }
            inbox.scheduled = true
            return true
        }
        if start { eventLoop.execute { self.run() } }
    }

    /// How many messages wait for `connection`.
    func queued(for connection: RealtimeConnection) -> Int {
        inbox.withLock { inbox in
            inbox.entries.count { entry in
                switch entry {
                case .one(let target, _): target === connection
                case .push(_, let targets): targets.connections.contains { $0.takeUnretainedValue() === connection }
                }
            }
        }
    }

    private func run() {
        var entries = inbox.withLock { inbox in
            var entries: [Entry] = []
            swap(&entries, &inbox.spare)
            swap(&entries, &inbox.entries)
            inbox.scheduled = false
            return entries
        }
        var writing: [RealtimeConnection] = []
        for entry in entries {
            switch entry {
            case .one(let connection, let item):
                if connection.take(item) { writing.append(connection) }
            case .push(let frames, let targets):
                for target in targets.connections {
                    // `targets.deliveries` holds the connection: used without a retain of its own.
                    let joins = target._withUnsafeGuaranteedRef { $0.take(.message(.frames(frames))) }
                    if joins { writing.append(target.takeUnretainedValue()) }
                }
            }
        }
        for connection in writing { connection.flush() }
        guard entries.capacity <= Self.spareEntries else { return }
        entries.removeAll(keepingCapacity: true)
        inbox.withLock { inbox in
            if inbox.spare.capacity < entries.capacity { inbox.spare = entries }
        }
    }
}

/// One ``FlushBatch`` per event loop.
final class FlushBatches: Sendable {
    private let batches = Mutex<[ObjectIdentifier: FlushBatch]>([:])

    func batch(for eventLoop: any EventLoop) -> FlushBatch {
        batches.withLock { batches in
            let key = ObjectIdentifier(eventLoop)
            if let batch = batches[key] { return batch }
            let batch = FlushBatch(eventLoop: eventLoop)
            batches[key] = batch
            return batch
        }
    }
}
