import ArgumentParser
import Foundation
import Histogram
import Logging
import Synchronization
import Transport
import Tree

/// `canopy-load`: drives a running canopy-server over real WebSocket connections and reports
/// throughput and latency percentiles.
@main
struct CanopyLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy-load",
        abstract: "Load generator for canopy-server.",
        subcommands: [Writes.self, Fanout.self, Idle.self])
}

struct ServerOptions: ParsableArguments {
    @Option(help: "Server address, host:port.")
    var server: String = "127.0.0.1:9000"

    @Option(help: "Namespace (database) to use.")
    var namespace: String = "load"

    var url: String { "ws://\(server)/.ws?v=5&ns=\(namespace)" }
}

func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Figures shared by the tasks of one run.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
    let ready = Atomic<Int>(0)
    let latencies = Mutex(
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three))

    func merge(_ histogram: Histogram<UInt64>) { latencies.withLock { $0.add(histogram) } }
    var histogram: Histogram<UInt64> { latencies.withLock { $0 } }
}

func describe(_ histogram: Histogram<UInt64>, _ label: String) -> String {
    String(
        format: "%@: p50 %.2f ms, p99 %.2f ms, max %.2f ms", label, Double(histogram.valueAtPercentile(50)) / 1e6,
        Double(histogram.valueAtPercentile(99)) / 1e6, Double(histogram.max) / 1e6)
}

func request(_ number: Int, _ action: ClientAction) -> String {
    ClientMessage.request(ClientRequest(number: number, action: action)).json.serialized()
}

/// Acknowledged writes per second from many concurrent writers.
struct Writes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledged writes/s from concurrent WebSocket writers.")

    @OptionGroup var options: ServerOptions
    @Option(help: "Concurrent writer connections.") var connections = 100
    @Option(help: "Writes each connection keeps in flight.") var pipeline = 32
    @Option(help: "Seconds to run.") var duration: Double = 10

    func run() async throws {
        let logger = Logger(label: "canopy-load")
        let tally = Tally()
        let deadline = monotonicNanoseconds() + UInt64(duration * 1e9)
        let (url, pipeline) = (options.url, pipeline)
        print("writes: \(connections) connections × \(pipeline) in flight for \(duration) s against \(options.server)")
        let started = monotonicNanoseconds()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<connections {
                group.addTask {
                    let connection = LoadConnection(url: url, logger: logger)
                    var incoming = connection.incoming.makeAsyncIterator()
                    guard await connection.awaitHello(&incoming) else { return }
                    var sentAt: [Int: UInt64] = [:]
                    var next = 1
                    func sendOne() {
                        let number = next
                        next += 1
                        sentAt[number] = monotonicNanoseconds()
                        connection.send(
                            request(
                                number,
                                .put(path: "load/w\(index)/k\(number % 1000)", data: .number(Double(number)), hash: nil)
                            ))
                    }
                    for _ in 0..<pipeline { sendOne() }
                    var local = Histogram<UInt64>(
                        highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
                    while let text = await incoming.next() {
                        guard let number = LoadConnection.responseNumber(text),
                            let sent = sentAt.removeValue(forKey: number)
                        else {
                            continue
                        }
                        tally.count.add(1, ordering: .relaxed)
                        _ = local.record(monotonicNanoseconds() - sent)
                        if monotonicNanoseconds() < deadline {
                            sendOne()
                        } else if sentAt.isEmpty {
                            break
                        }
                    }
                    connection.close()
                    tally.merge(local)
                }
            }
        }
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        let total = tally.count.load(ordering: .relaxed)
        print(String(format: "acked writes: %d in %.2f s = %.0f writes/s", total, elapsed, Double(total) / elapsed))
        print(describe(tally.histogram, "ack latency"))
    }
}

/// Events per second fanned out from writers to many listeners, with write-to-event latency.
struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Events/s fanned out to many listeners, with latency percentiles.")

    @OptionGroup var options: ServerOptions
    @Option(help: "Listener connections (all on one location).") var listeners = 1000
    @Option(help: "Writes per second (one writer connection).") var rate = 200
    @Option(help: "Seconds to write.") var duration: Double = 10

    func run() async throws {
        let logger = Logger(label: "canopy-load")
        let tally = Tally()
        let (url, listeners, rate) = (options.url, listeners, rate)
        let topic = "fan/topic"
        let expectedWrites = Int(Double(rate) * duration)
        print("fanout: \(listeners) listeners, \(rate) writes/s for \(duration) s against \(options.server)")
        let writer = LoadConnection(url: url, logger: logger)
        var writerIncoming = writer.incoming.makeAsyncIterator()
        guard await writer.awaitHello(&writerIncoming) else {
            throw ValidationError("could not connect to \(options.server)")
        }
        let drain = Task { while await writerIncoming.next() != nil {} }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<listeners {
                group.addTask {
                    let connection = LoadConnection(url: url, logger: logger)
                    var incoming = connection.incoming.makeAsyncIterator()
                    guard await connection.awaitHello(&incoming) else { return }
                    connection.send(request(1, .listen(path: topic, query: nil, tag: nil, hash: nil)))
                    var local = Histogram<UInt64>(
                        highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
                    var count = 0
                    var isReady = false
                    while let text = await incoming.next() {
                        if !isReady, LoadConnection.responseNumber(text) == 1 {
                            isReady = true
                            tally.ready.add(1, ordering: .relaxed)
                            continue
                        }
                        guard let sent = LoadConnection.integer(after: "sent:", in: text) else { continue }
                        _ = local.record(monotonicNanoseconds() &- sent)
                        count += 1
                        tally.count.add(1, ordering: .relaxed)
                        if count >= expectedWrites { break }
                    }
                    connection.close()
                    tally.merge(local)
                }
            }
            group.addTask {
                while tally.ready.load(ordering: .relaxed) < listeners { try? await Task.sleep(for: .milliseconds(50)) }
                print("all \(listeners) listeners ready; writing")
                let interval = 1e9 / Double(rate)
                let start = monotonicNanoseconds()
                for number in 0..<expectedWrites {
                    let due = start + UInt64(Double(number) * interval)
                    let now = monotonicNanoseconds()
                    if due > now { try? await Task.sleep(for: .nanoseconds(Int(due - now))) }
                    writer.send(
                        request(
                            number + 2, .put(path: topic, data: .string("sent:\(monotonicNanoseconds())"), hash: nil)))
                }
            }
            let started = monotonicNanoseconds()
            await group.waitForAll()
            let elapsed = Double(monotonicNanoseconds() - started) / 1e9
            let total = tally.count.load(ordering: .relaxed)
            print(
                String(
                    format: "events received: %d (expected %d) in %.2f s = %.0f events/s", total,
                    expectedWrites * listeners, elapsed, Double(total) / elapsed))
            print(describe(tally.histogram, "write-to-event latency"))
        }
        writer.close()
        drain.cancel()
    }
}

/// Server memory per idle connection.
struct Idle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Server memory per idle connection (reads the server's RSS).")

    @OptionGroup var options: ServerOptions
    @Option(help: "Idle connections to open.") var connections = 1000
    @Option(help: "Process id of the canopy-server (for /proc/PID/status).") var serverPid: Int32

    func rss() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(serverPid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw ValidationError("cannot read VmRSS of process \(serverPid)") }
        return kilobytes * 1024
    }

    func run() async throws {
        let logger = Logger(label: "canopy-load")
        // Warm up: one connection so lazily created server state does not count as per-connection cost.
        let warm = LoadConnection(url: options.url, logger: logger)
        var warmIncoming = warm.incoming.makeAsyncIterator()
        _ = await warm.awaitHello(&warmIncoming)
        try await Task.sleep(for: .seconds(1))
        let before = try rss()
        var open: [LoadConnection] = []
        for _ in 0..<connections {
            let connection = LoadConnection(url: options.url, logger: logger)
            var incoming = connection.incoming.makeAsyncIterator()
            guard await connection.awaitHello(&incoming) else { throw ValidationError("connection failed") }
            open.append(connection)
        }
        try await Task.sleep(for: .seconds(2))
        let after = try rss()
        let perConnection = Double(after - before) / Double(connections)
        print(
            String(
                format: "idle connections: %d, server RSS %.1f MB → %.1f MB: %.1f KB per connection",
                connections, Double(before) / 1e6, Double(after) / 1e6, perConnection / 1024))
        for connection in open { connection.close() }
        warm.close()
    }
}
