import NIOCore
import NIOPosix
import RealtimeClientSocket
import Synchronization

/// Counts of one kind of stalled reader (realtime connections or event streams).
final class StallTally: Sendable {
    /// Readers whose listen was answered (or whose stream's head was read) and that stopped reading.
    let stalled = Atomic<Int>(0)
    /// Readers whose listen was refused.
    let refused = Atomic<Int>(0)
    /// Readers whose connection closed (seen only while, or once, they read again).
    let closed = Atomic<Int>(0)
}

/// A realtime connection that listens to `path` and, once the listen is answered, never reads its
/// socket again (until ``LoadConnection/setReading(_:)``), keeping it open.
final class StalledReaderSession: LoadSession {
    private let path: String
    private let tally: StallTally
    private var listened = false
    private var answered = false

    init(path: String, tally: StallTally) {
        self.path = path
        self.tally = tally
    }

    func received(_ message: String, output: inout LoadOutput) {
        if !listened {
            guard MessageText.isHello(message) else { return }
            listened = true
            output.send(Requests.listen(1, path: path))
            return
        }
        guard !answered, MessageText.responseNumber(message) == 1 else { return }
        answered = true
        if MessageText.status(message) == "ok" {
            output.stopReadingSocket()
            tally.stalled.add(1, ordering: .relaxed)
        } else {
            tally.refused.add(1, ordering: .relaxed)
        }
    }

    func closed() { tally.closed.add(1, ordering: .relaxed) }
}

/// A REST event stream (`GET <target>` with `Accept: text/event-stream`) on a raw TCP connection
/// whose client reads the response's head and then nothing more, keeping the socket open.
final class StalledStream: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects, sends the request, and returns once the head of a `200` response was read and the
    /// socket is no longer read; `tally` counts it as stalled, and as closed when its channel closes.
    static func open(
        host: String, port: Int, target: String, receiveBufferSize: Int?, tally: StallTally
    ) async throws -> StalledStream {
        let bootstrap = LoadConnection.bootstrap(
            group: MultiThreadedEventLoopGroup.singleton, receiveBufferSize: receiveBufferSize)
        let request = "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nAccept: text/event-stream\r\n\r\n"
        let initializer: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<any Channel>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                let headRead = channel.eventLoop.makePromise(of: Void.self)
                try channel.pipeline.syncOperations.addHandler(
                    ResponseHeadHandler(request: request, expectedStatus: 200, headRead: headRead))
                // Stopped as soon as the head was read, on the event loop, within the same read.
                return headRead.futureResult.flatMap { channel.setOption(.autoRead, value: false) }.map { channel }
            }
        }
        let url = "http://\(host):\(port)\(target)"
        do {
            let opened = try await LoadConnection.connect(
                bootstrap, host: host, port: port, channelInitializer: initializer)
            let channel = try await opened.get()
            tally.stalled.add(1, ordering: .relaxed)
            channel.closeFuture.whenComplete { _ in tally.closed.add(1, ordering: .relaxed) }
            return StalledStream(channel: channel)
        } catch {
            throw LoadError.httpFailed(url: url, reason: "\(error)")
        }
    }

    /// Reads the socket again (what it reads is dropped), or stops reading it.
    func setReading(_ reading: Bool) async throws {
        try await channel.setOption(.autoRead, value: reading).get()
    }

    func close() { channel.close(promise: nil) }
}
