import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import Query
import Synchronization
import Tree

/// A REST event-stream listener: pushes become `put` / `patch` events relative to its location.
///
/// Events wait in a queue counted in bytes; when its client reads too slowly for the queue to stay
/// under `maxPendingBytes`, no more events are queued and `onOverflow` runs (once), which closes
/// the stream.
final class EventStreamSubscriber: Subscriber {
    let subscriberID = SubscriberIDs.make()
    let location: Path
    let events: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let maxPendingBytes: Int
    private let onOverflow: @Sendable () -> Void
    private let pending = Mutex(Pending())

    private struct Pending {
        var bytes = 0
        var overflowed = false
    }

    init(location: Path, maxPendingBytes: Int = .max, onOverflow: @escaping @Sendable () -> Void = {}) {
        self.location = location
        self.maxPendingBytes = maxPendingBytes
        self.onOverflow = onOverflow
        (events, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
    }

    /// Bytes of events queued and not yet taken by the stream's writer.
    var pendingBytes: Int { pending.withLock { $0.bytes } }

    /// The writer took `event` from the queue.
    func taken(_ event: String) {
        pending.withLock { $0.bytes -= event.utf8.count }
    }

    func deliver(_ push: Push) {
        let relative = location.contains(push.path) ? Path.relative(from: location, to: push.path) : .root
        let name = push.kind == .merge ? "patch" : "put"
        send(event: name, data: ["path": .string(relative.description), "data": push.data])
    }

    /// Permission to read was lost: `cancel`, and the stream ends.
    func revoke(path: Path, params: QueryParams) {
        send(event: "cancel", data: .null)
        finish()
    }

    func send(event: String, data: JSONValue) {
        let text = "event: \(event)\ndata: \(data.serialized())\n\n"
        let size = text.utf8.count
        let outcome = pending.withLock { pending -> (queue: Bool, overflowed: Bool) in
            guard !pending.overflowed else { return (false, false) }
            guard pending.bytes + size <= maxPendingBytes else {
                pending.overflowed = true
                return (false, true)
            }
            pending.bytes += size
            return (true, false)
        }
        if outcome.queue { continuation.yield(text) }
        if outcome.overflowed { onOverflow() }
    }

    func finish() { continuation.finish() }
}

extension CanopyServer {
    /// `GET` with `Accept: text/event-stream`: the listener is registered and its first `put` queued
    /// before the headers go out; `keep-alive` events follow at the configured interval. A stream
    /// the rules stop allowing gets `cancel` and ends; one whose credential expires (`expiresAt`)
    /// gets `auth_revoked` and ends. The stream holds `lease` until it ends. When the client leaves (`channel` closes, or only its input
    /// does), even before the response started, its listener and its place in the metrics go at once.
    func eventStream(
        _ rest: RESTRequest, caller: Caller, until expiresAt: Date?, lease: DatabaseLease, channel: any Channel
    ) async -> Response {
        let database = lease.database
        let params: QueryParams
        do {
            params = try QueryParams(restParameters: rest.parameters)
        } catch {
            lease.release()
            return Self.error(.badRequest, error.description)
        }
        let (logger, trips) = (logger, metrics)
        let subscriber = EventStreamSubscriber(
            location: rest.path, maxPendingBytes: configuration.maxPendingOutboundBytes
        ) { [limit = configuration.maxPendingOutboundBytes] in
            logger.warning(
                "closing an event stream that does not read what it is sent", metadata: ["limit_bytes": "\(limit)"])
            trips.tripped(.pendingOutboundBytes)
            channel.close(promise: nil)
        }
        let allowed = await database.listen(
            subscriber, path: rest.path, params: params, queryID: params.queryIdentifier, tag: nil, hash: nil,
            caller: caller)
        guard allowed else {
            lease.release()
            return Self.permissionDenied
        }
        metrics.connections.increment()
        connections.streamStarted(subscriber)
        let keepalive = configuration.sseKeepaliveInterval
        let (metrics, connections) = (metrics, connections)
        let end = OnceAction {
            subscriber.finish()
            connections.streamEnded(subscriber)
            metrics.connections.decrement()
            Task {
                await database.removeSubscriber(subscriber.subscriberID)
                lease.release()
            }
        }
        // The body may never run (the client left before the headers went out), and a stream
        // waiting for its next event notices no close by itself.
        let inputClosed = InputClosedHandler { end.run() }
        channel.closeFuture.whenComplete { _ in end.run() }
        try? await channel.pipeline.addHandler(inputClosed, position: .first).get()
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        let body = ResponseBody { writer in
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: keepalive)
                    subscriber.send(event: "keep-alive", data: .null)
                }
            }
            let expiry = expiresAt.map { expiresAt in
                Task {
                    let delay = expiresAt.timeIntervalSinceNow
                    if delay > 0 { try? await Task.sleep(for: .milliseconds(Int64(delay * 1000))) }
                    guard !Task.isCancelled else { return }
                    subscriber.send(event: "auth_revoked", data: "credential is no longer valid")
                    subscriber.finish()
                }
            }
            defer {
                ticker.cancel()
                expiry?.cancel()
                end.run()
                channel.pipeline.removeHandler(inputClosed, promise: nil)
            }
            for await event in subscriber.events {
                subscriber.taken(event)
                try await writer.write(ByteBuffer(string: event))
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }
}
