import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import Query
import Tree

/// REST event streams (`GET` with `Accept: text/event-stream`): each a ``EventStreamSubscriber``
/// of its namespace's database, tracked among the open connections until it ends.
struct EventStreamController: Sendable {
    let connections: OpenConnections
    let metrics: ServerMetrics
    /// What the streams' queued events count in, across the server.
    let outboundBudget: OutboundBudget
    /// Bytes of events a stream may hold for a client that does not read them.
    let maxPendingBytes: Int
    let keepaliveInterval: Duration
    let logger: Logger

    /// `GET` with `Accept: text/event-stream`: the listener is registered and its first `put` queued
    /// before the headers go out; `keep-alive` events follow at the configured interval. A stream
    /// the rules stop allowing gets `cancel` and ends; one whose credential expires (`expiresAt`)
    /// gets `auth_revoked` and ends. The stream holds `lease` until it ends. When the client leaves
    /// (`channel` closes, or only its input does), even before the response started, its listener
    /// and its place in the metrics go at once, in one step.
    func stream(
        _ rest: RESTRequest, caller: Caller, until expiresAt: Date?, lease: DatabaseLease, channel: any Channel
    ) async -> Response {
        let database = lease.database
        // Watched from the start: a client that leaves while its stream is being registered closes
        // its input once, before anything else would see it.
        let departure = ClientDeparture()
        let inputClosed = InputClosedHandler { departure.left() }
        channel.closeFuture.whenComplete { _ in departure.left() }
        try? await channel.pipeline.addHandler(inputClosed, position: .first).get()
        let params: QueryParams
        do {
            params = try QueryParams(restParameters: rest.parameters)
        } catch {
            channel.pipeline.removeHandler(inputClosed, promise: nil)
            lease.release()
            return RESTResponse.error(.badRequest, error.description)
        }
        let (logger, trips) = (logger, metrics)
        let subscriber = EventStreamSubscriber(
            location: rest.path, maxPendingBytes: maxPendingBytes, budget: outboundBudget
        ) { limit in
            logger.warning(
                limit == .pendingOutboundBytes
                    ? "closing an event stream that does not read what it is sent"
                    : "closing the event stream stalled for the longest: the server holds too much for slow readers")
            trips.tripped(limit)
            channel.close(promise: nil)
        }
        let allowed = await database.listenAndCount(subscriber, path: rest.path, params: params, caller: caller)
        guard allowed else {
            channel.pipeline.removeHandler(inputClosed, promise: nil)
            lease.release()
            return RESTResponse.permissionDenied
        }
        connections.streamStarted(subscriber)
        let keepalive = keepaliveInterval
        let connections = connections
        let end = OnceAction {
            subscriber.finish()
            subscriber.ended()
            connections.streamEnded(subscriber)
            // Its listener and its place among the open connections go together.
            Task {
                await database.dropListensAndUncount(subscriber.subscriberID)
                lease.release()
            }
        }
        // The body may never run (the client left before the headers went out), and a stream
        // waiting for its next event notices no close by itself.
        departure.whenLeft(end)
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
