import ArgumentParser
import Canopy
import Foundation
import ProcessResources
import Synchronization
import Transport
import Tree

/// What one SDK client costs to follow a busy query window, against the same load read with raw
/// frames.
struct Window: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Child events/s one Canopy SDK client processes from a busy limitToLast window, against raw frames.",
        discussion: """
            Seeds `win/items` with --children children, then one writer connection sets random children \
            to random scores at --rate writes/s for --duration s, three times: alone, then read by a raw-frame \
            listener of the query (orderByValue, limitToLast --window) that decodes each push, then by a \
            Canopy SDK client observing the query's child events. A first run with no reader measures the \
            writer's own CPU, which is taken out. Reports, for each reader, the window changes received \
            per second and this process's CPU per change.
            """)

    @OptionGroup var options: ServerOptions
    @Option(help: "Children under win/items.") var children = 1000
    @Option(help: "The window: limitToLast of the query.") var window = 100
    @Option(help: "Writes per second.") var rate = 1000
    @Option(help: "Seconds to write, per run.") var duration: Double = 10

    func validate() throws {
        guard children > 0, window > 0, rate > 0, duration > 0 else {
            throw ValidationError("--children, --window, --rate and --duration must be positive")
        }
        _ = try options.endpoint()
    }

    func run() async throws {
        let (host, port) = try options.endpoint()
        report("window: \(children) children, limitToLast(\(window)) by value, \(rate) writes/s for \(duration) s")
        try await options.checkReachable()
        let answers = AnswerCounts()
        let writer = try await options.connect { AnswerCountingSession(counts: answers) }
        let server = options.server
        // Refused writes or a refused listen leave nothing to measure: the run ends at once.
        let refused: @Sendable (Tally?) -> LoadError? = { reader in
            if let reader, !reader.refusals.byStatus.isEmpty {
                return .refused(what: "listens", refusals: reader.refusals.byStatus, total: 1, server: server)
            }
            let writes = answers.refusals.byStatus
            guard writes.isEmpty else {
                return .refused(what: "writes", refusals: writes, total: answers.answered, server: server)
            }
            return nil
        }
        let writes = Int(Double(rate) * duration)
        var seed: [String] = []
        for index in 0..<children { seed.append("\"k\(index)\":\(Int.random(in: 0..<1_000_000))") }
        writer.send(Requests.put(1, path: "win/items", json: "{" + seed.joined(separator: ",") + "}"))
        let seedDeadline = deadline(seconds: 30)
        while answers.answered == 0 {
            guard monotonicNanoseconds() < seedDeadline else {
                throw LoadError.check("the seed write to win/items was not answered within 30 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        if let failure = refused(nil) { throw failure }

        // The writer alone, to take its CPU out of the readers' figures.
        let writerOnly = try await drive(writer, firstNumber: 2, tally: Tally())
        report(String(format: "writer alone: %.3f s of this process's CPU", writerOnly.cpuSeconds))
        let rawTally = Tally()
        let raw = try await options.connect { RawWindowSession(window: window, tally: rawTally) }
        while rawTally.ready.load(ordering: .relaxed) == 0 {
            if let failure = refused(rawTally) { throw failure }
            try await Task.sleep(for: .milliseconds(10))
        }
        var rawRun = try await drive(writer, firstNumber: 2 + writes, tally: rawTally)
        rawRun.cpuSeconds -= writerOnly.cpuSeconds
        raw.close()
        report(rawRun.describe("raw frames"))

        let database = Database.database(url: "http://\(host):\(port)?ns=\(options.namespace)")
        if let token = options.authToken { database.setAuthToken(token) }
        let query = database.reference(withPath: "win/items").queryOrderedByValue().queryLimited(toLast: UInt(window))
        let events = Tally()
        for type in [DataEventType.childAdded, .childChanged, .childRemoved, .childMoved] {
            query.observe(type, with: { _ in events.count.add(1, ordering: .relaxed) }) { error in
                events.refusals.add((error as? DatabaseError)?.code ?? "\(error)")
            }
        }
        // The window's first children arrive as child_added events first.
        while events.count.load(ordering: .relaxed) < window {
            if let failure = refused(events) { throw failure }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(500))
        var sdkRun = try await drive(writer, firstNumber: 2 + 2 * writes, tally: events)
        sdkRun.cpuSeconds -= writerOnly.cpuSeconds
        report(sdkRun.describe("Canopy SDK"))
        if let failure = refused(nil) { throw failure }
        report(
            String(
                format: "SDK / raw: %.2f× the changes per second, %.2f× the CPU per change",
                sdkRun.perSecond / max(rawRun.perSecond, 1), sdkRun.cpuPerChange / max(rawRun.cpuPerChange, 1e-9)))
        writer.close()
    }

    /// What one run measured.
    struct Run {
        var changes: Int
        var seconds: Double
        var cpuSeconds: Double
        var perSecond: Double { Double(changes) / seconds }
        var cpuPerChange: Double { changes > 0 ? cpuSeconds / Double(changes) : 0 }

        func describe(_ reader: String) -> String {
            String(
                format: "%@: %d window changes in %.2f s = %.0f/s; %.1f µs of this process's CPU per change", reader,
                changes, seconds, perSecond, cpuPerChange * 1e6)
        }
    }

    /// Writes random scores at the rate for the duration, then waits a second for the last events.
    private func drive(_ writer: LoadConnection, firstNumber: Int, tally: Tally) async throws -> Run {
        let before = tally.count.load(ordering: .relaxed)
        let cpuBefore = ProcessCPU.ownSeconds()
        let started = monotonicNanoseconds()
        let count = Int(Double(rate) * duration)
        let interval = 1e9 / Double(rate)
        for offset in 0..<count {
            let due = started + UInt64(Double(offset) * interval)
            let now = monotonicNanoseconds()
            if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
            let child = Int.random(in: 0..<children)
            writer.send(
                Requests.put(
                    firstNumber + offset, path: "win/items/k\(child)", json: String(Int.random(in: 0..<1_000_000))))
        }
        try await Task.sleep(for: .seconds(1))
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        return Run(
            changes: tally.count.load(ordering: .relaxed) - before, seconds: seconds,
            cpuSeconds: ProcessCPU.ownSeconds() - cpuBefore)
    }
}

/// A raw-frame listener of the window query: decodes every push and counts the children it changes.
final class RawWindowSession: LoadSession {
    private let window: Int
    private let tally: Tally
    private var listening = false

    init(window: Int, tally: Tally) {
        self.window = window
        self.tally = tally
    }

    func received(_ message: String, output: inout LoadOutput) {
        if !listening {
            guard MessageText.isHello(message) else { return }
            listening = true
            let query = #"{"i":".value","l":\#(window),"vf":"r"}"#
            output.send(#"{"t":"d","d":{"r":1,"a":"q","b":{"p":"win/items","q":\#(query),"t":1,"h":""}}}"#)
            return
        }
        guard let json = try? JSONValue(parsing: message), let decoded = try? ServerMessage(json: json) else { return }
        switch decoded {
        case .merge(_, .object(let members), _): tally.count.add(members.count, ordering: .relaxed)
        case .response(1, .ok, _): tally.ready.store(1, ordering: .relaxed)
        case .response(1, let status, _): tally.refusals.add(status.text)
        default: break
        }
    }

    func closed() {}
}
