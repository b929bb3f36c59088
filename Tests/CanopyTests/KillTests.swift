import CanopyServer
import CanopyTesting
import Foundation
import Synchronization
import Testing
import Tree

/// A running `canopy-write-probe` and the lines it printed.
final class Probe: Sendable {
    let process: ChildProcess
    private let lines = Mutex<[String]>([])
    private let partial = Mutex(Data())

    init(url: String, folder: URL, first: Int, count: Int, options: [String] = []) throws {
        guard let executable = Self.executable else {
            throw ProbeError.notBuilt
        }
        let output = Pipe()
        process = try ChildProcess.launch(
            executable, [url, folder.path, "\(first)", "\(count)"] + options, standardOutput: .pipe(output))
        // A reading thread, not `readabilityHandler` (see `ServerProcess`).
        let reader = output.fileHandleForReading
        Thread { [self] in
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                self.partial.withLock { buffer in
                    buffer.append(data)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        self.lines.withLock { $0.append(line) }
                    }
                }
            }
            try? reader.close()
        }.start()
    }

    var printed: [String] { lines.withLock { $0 } }

    func wait(timeout: Duration = .seconds(60), until condition: ([String]) -> Bool) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(10)) { condition(self.printed) }
    }

    func kill() {
        process.send(SIGKILL)
        process.waitUntilExit()
    }

    /// The `canopy-write-probe` binary built with the tests.
    static let executable = BuiltExecutable.locate("canopy-write-probe")
}

enum ProbeError: Error { case notBuilt }

/// `canopy-write-probe` run as a separate process, the way an app dies: killed with SIGKILL in the
/// middle of its write queue, then started again.
@Suite(.timeLimit(.minutes(3)))
struct KillTests {

    @Test func aClientKilledInTheMiddleOfItsWriteQueueLosesNoDurableWriteAndAppliesNoneTwice() async throws {
        try await withServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "canopy-kill-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = "http://127.0.0.1:\(server.port)?ns=test"

            let killed = try Probe(url: url, folder: folder, first: 0, count: 400)
            #expect(
                await killed.wait { $0.filter { $0.hasPrefix("durable") }.count >= 100 }, "\(killed.printed.suffix(5))")
            killed.kill()
            let durable = Set(
                killed.printed.compactMap { line -> String? in
                    line.hasPrefix("durable ") ? String(line.dropFirst("durable ".count)) : nil
                })

            let restarted = try Probe(url: url, folder: folder, first: 400, count: 0)
            #expect(await restarted.wait { $0.contains { $0.hasPrefix("acknowledged") } }, "\(restarted.printed)")
            #expect(await restarted.process.exit() == .exit(0))

            let log = try await ServerProbe.value(server, "log")
            // Keys 0, 1, … may come back as a JSON array: read them as children.
            let landed = Set(try Node(json: log ?? .null).children.map { $0.key.string })
            let counter = try await ServerProbe.value(server, "counter")
            #expect(durable.isSubset(of: landed), "durable writes lost: \(durable.subtracting(landed).sorted())")
            #expect(
                counter == .number(Double(landed.count)),
                "a write applied twice: \(String(describing: counter)) for \(landed.count)")
            #expect(landed.count >= 100 && landed.count <= 400)
        }
    }

    /// The indexes a probe printed after `prefix` ("saved", "durable", …).
    static func indexes(_ probe: Probe, _ prefix: String) -> Set<Int> {
        Set(
            probe.printed.compactMap { line in
                line.hasPrefix(prefix + " ") ? Int(line.dropFirst(prefix.count + 1)) : nil
            })
    }

    /// What the transactions did on the server: the counter and the indexes logged.
    static func transactionsLanded(_ server: TestServer) async throws -> (counter: JSONValue?, logged: Set<Int>) {
        let counter = try await ServerProbe.value(server, "tx/counter")
        let log = try await ServerProbe.value(server, "tx/log")
        return (counter, Set(try Node(json: log ?? .null).children.compactMap { Int($0.key.string.dropFirst()) }))
    }

    /// Beyond Firebase: transactions made offline are kept on the device, so five increments made
    /// offline by an app then killed land exactly five times once it runs again with a network.
    @Test func fiveOfflineTransactionsAcrossAKillAddExactlyFive() async throws {
        try await withServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "canopy-kill-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = "http://127.0.0.1:\(server.port)?ns=test"

            let offline = try Probe(
                url: url, folder: folder, first: 0, count: 5, options: ["--transactions", "--offline"])
            #expect(await offline.wait { $0.contains("queued") }, "\(offline.printed)")
            offline.kill()
            #expect(Self.indexes(offline, "saved") == [0, 1, 2, 3, 4])
            let sentOffline = try await ServerProbe.value(server, "tx")
            #expect(
                sentOffline == .null, "nothing was sent offline: \(String(describing: sentOffline)) \(offline.printed)")

            let online = try Probe(url: url, folder: folder, first: 5, count: 0, options: ["--transactions"])
            defer { online.kill() }
            #expect(await ServerProbe.wait(server, ["tx/counter"]) { $0 == [5] })
            try await Task.sleep(for: .milliseconds(500))
            let landed = try await Self.transactionsLanded(server)
            #expect(landed.counter == 5 && landed.logged == [0, 1, 2, 3, 4], "\(landed)")
        }
    }

    /// Killed while its transactions go back and forth with the server: each transaction kept on
    /// the device lands once after the restart, none twice (a put the server applied but whose
    /// answer was lost is resent under the same write id, not run again).
    @Test func transactionsKilledInFlightLandOnceEach() async throws {
        try await withServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "canopy-kill-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = "http://127.0.0.1:\(server.port)?ns=test"

            let killed = try Probe(url: url, folder: folder, first: 0, count: 300, options: ["--transactions"])
            #expect(await killed.wait { _ in Self.indexes(killed, "committed").count >= 40 })
            killed.kill()
            let saved = Self.indexes(killed, "saved")
            // (Usually some were in flight, but a kill's timing is not the test's to choose.)
            let committed = Self.indexes(killed, "committed")
            print("killed with \(saved.count) transactions saved, \(committed.count) committed")

            let restarted = try Probe(url: url, folder: folder, first: 300, count: 0, options: ["--transactions"])
            defer { restarted.kill() }
            // The restarted probe starts, connects and runs up to 300 restored transactions: on a busy
            // machine that took more than the default 15 s.
            #expect(
                await ServerProbe.wait(server, ["tx/counter"], timeout: .seconds(60)) { values in
                    guard case .number(let counter)? = values.first ?? nil else { return false }
                    return Int(counter) >= saved.count
                })
            try await Task.sleep(for: .milliseconds(500))
            let landed = try await Self.transactionsLanded(server)
            #expect(landed.counter == .number(Double(landed.logged.count)), "none applied twice: \(landed.counter)")
            #expect(saved.isSubset(of: landed.logged), "lost: \(saved.subtracting(landed.logged).sorted())")
            #expect(landed.logged.count <= saved.count + 20, "at most a batch not yet reported saved")
        }
    }
}
