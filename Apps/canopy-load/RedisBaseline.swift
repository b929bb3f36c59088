import NIOCore
import NIOPosix
import ProcessResources
import Synchronization

/// The fan-out load through Redis pub/sub: the same listener count, rate and message as the
/// Canopy run, `SUBSCRIBE` per listener and `PUBLISH` from one connection, measured by the same
/// ``FanoutDriver`` and ``EventRecorder``.
enum RedisBaseline {
    static let channel = "fan:topic"

    static func run(_ plan: FanoutPlan, server: RedisServer, console: Console) async throws -> FanoutResult {
        let tally = FanoutTally()
        let replies = PublishReplies()
        let group = MultiThreadedEventLoopGroup.singleton
        let publisher = try await RESPConnection.connect(host: server.host, port: server.port, group: group) {
            PublisherSession(replies: replies)
        }
        let expected = plan.writes
        let subscribers = try await connectAll(plan.listeners) { _ in
            try await RESPConnection.connect(host: server.host, port: server.port, group: group) {
                SubscriberSession(expected: expected, tally: tally)
            }
        }
        defer {
            publisher.close()
            for subscriber in subscribers { subscriber.close() }
        }
        let pid = server.process?.pid
        let result = try await FanoutDriver.run(
            plan, target: "redis", tally: tally, console: console, serverCPU: { pid.flatMap(ProcessCPU.seconds(of:)) }
        ) { _, text in
            publisher.send([["PUBLISH", channel, text]])
        }
        let fewest = replies.fewestReceivers.load(ordering: .relaxed)
        if fewest < plan.listeners {
            console.line("redis: warning: a PUBLISH reached only \(fewest) of \(plan.listeners) subscribers")
        }
        return result
    }
}

/// The fewest subscribers any `PUBLISH` reached (Redis answers each with that count).
final class PublishReplies: Sendable {
    let fewestReceivers = Atomic<Int>(Int.max)
}

/// The publishing connection: reads the receiver count of each `PUBLISH`.
private final class PublisherSession: RESPSession {
    private let replies: PublishReplies

    init(replies: PublishReplies) { self.replies = replies }

    func opened(output: inout [[String]]) {}

    func received(_ value: RESPValue, output: inout [[String]]) {
        guard case .integer(let receivers) = value else { return }
        if receivers < replies.fewestReceivers.load(ordering: .relaxed) {
            replies.fewestReceivers.store(receivers, ordering: .relaxed)
        }
    }

    func closed() {}
}

/// One subscriber: subscribes to the channel, then records every message like a Canopy listener.
private final class SubscriberSession: RESPSession {
    private var recorder: EventRecorder

    init(expected: Int, tally: FanoutTally) { recorder = EventRecorder(expected: expected, tally: tally) }

    func opened(output: inout [[String]]) { output.append(["SUBSCRIBE", RedisBaseline.channel]) }

    func received(_ value: RESPValue, output: inout [[String]]) {
        guard case .array(let parts?) = value, parts.count == 3, case .bulk(let kind?) = parts[0] else { return }
        // `message` (7 bytes) or `subscribe` (9), told apart without making a string.
        if kind.readableBytes == 7, case .bulk(let payload?) = parts[2] {
            recorder.record(String(buffer: payload))
        } else if kind.readableBytes == 9 {
            recorder.tally.ready.add(1, ordering: .relaxed)
        }
    }

    func closed() { recorder.closed() }
}
