import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// How long a namespace with many leaves takes to load: a server opens a namespace on its first
/// use and loads the whole tree from its store, so the first read after a restart waits for it.
struct TreeLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree-load",
        abstract: "Time to load a namespace's tree after a restart, on SQLite and, with --postgres, on PostgreSQL.",
        discussion: """
            Starts canopy-server on 127.0.0.1:--port with its embedded SQLite store in a temporary \
            folder, writes --leaves leaves (numbers, 10,000 to a node) to a new namespace through REST, \
            then --rounds times stops the server (SIGTERM), starts it again and times the first read \
            (GET of one leaf), which opens the namespace and loads its tree. With --postgres the same \
            runs, one after the other, on that PostgreSQL database (a namespace of its own, deleted at \
            the end), and the ratio is printed.
            """)

    @Option(help: "Leaves in the namespace.") var leaves = 100_000
    @Option(help: "Restarts to time, per store.") var rounds = 5
    @Option(help: ArgumentHelp("Also measure on this PostgreSQL database.", valueName: "postgres-url"))
    var postgres: String?
    @Option(help: "The canopy-server executable (default: beside canopy-load, then on PATH).")
    var serverBinary: String?
    @Option(help: "The port the server listens on.") var port = 9600
    @Flag(help: "Print one JSON object with the figures on standard output (the other lines go to standard error).")
    var json = false

    static let leavesPerNode = 10_000

    func validate() throws {
        guard leaves >= 1 else { throw ValidationError("--leaves must be positive") }
        guard rounds >= 1 else { throw ValidationError("--rounds must be positive") }
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1–65535") }
    }

    func run() async throws {
        let run = try ScenarioRun(json: json)
        let console = run.console
        let binary =
            try serverBinary
            ?? ChildProcess.locate("canopy-server", preferring: [ChildProcess.ownFolder].compactMap { $0 })
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var figures: [TreeLoadFigure] = []
        do {
            figures.append(try await measure(store: nil, binary: binary, client: client, run: run))
            if let postgres {
                figures.append(try await measure(store: postgres, binary: binary, client: client, run: run))
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        if figures.count == 2 {
            console.line(
                String(
                    format: "PostgreSQL / SQLite (median load time): %.2f×",
                    figures[1].medianMilliseconds / figures[0].medianMilliseconds))
        }
        try console.emit(TreeLoadReport(scenario: "tree-load", leaves: leaves, machine: run.machine, stores: figures))
    }

    /// Fills a namespace on `store` (`nil`: SQLite in a temporary folder), then times `rounds`
    /// loads of it, each after a restart.
    private func measure(
        store: String?, binary: String, client: HTTPClient, run: ScenarioRun
    ) async throws -> TreeLoadFigure {
        let console = run.console
        let name = store == nil ? "SQLite" : "PostgreSQL"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-tree-load-\(ProcessInfo.processInfo.processIdentifier)-\(name)"
        ).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let storeArguments = store.map { ["--store", $0, "--node-name", "tree-load"] } ?? []
        let server = LaunchedServer(
            binary: binary, host: "127.0.0.1", port: port, folder: folder, removeFolder: true, inMemory: false,
            extraArguments: storeArguments)
        let namespace = "treeload\(ProcessInfo.processInfo.processIdentifier)"
        let base = "http://127.0.0.1:\(port)"
        let loads = try await run.withServers(launching: {
            try await server.start()
            return LaunchedServers([server])
        }) { _ in
            let filled = monotonicNanoseconds()
            var written = 0
            var node = 0
            while written < leaves {
                let count = min(Self.leavesPerNode, leaves - written)
                let body = "{" + (0..<count).map { "\"k\($0)\":\(written + $0)" }.joined(separator: ",") + "}"
                try await Self.request(client, .PUT, "\(base)/l/n\(node).json?ns=\(namespace)&print=silent", body: body)
                written += count
                node += 1
                console.progress("\(name): wrote \(written) of \(leaves) leaves")
            }
            console.line(
                "\(name): wrote \(leaves) leaves in "
                    + String(format: "%.1f s", Double(monotonicNanoseconds() - filled) / 1e9))
            var loads: [Double] = []
            for round in 1...rounds {
                await server.stop(SIGTERM)
                try await server.start()
                let started = monotonicNanoseconds()
                let leaf = try await Self.request(client, .GET, "\(base)/l/n0/k0.json?ns=\(namespace)")
                let took = Double(monotonicNanoseconds() - started) / 1e6
                guard leaf == "0" else {
                    throw LoadError.check("\(name): the first leaf read back as \(leaf), not 0")
                }
                loads.append(took)
                console.progress("\(name): load \(round) of \(rounds): " + String(format: "%.0f ms", took))
            }
            try await Self.request(client, .DELETE, "\(base)/.json?ns=\(namespace)&print=silent")
            return loads
        }
        let figure = TreeLoadFigure(store: name, loadMilliseconds: loads, leaves: leaves)
        console.line(figure.describe())
        return figure
    }

    /// Sends one request and returns the body of its 2xx answer.
    @discardableResult
    private static func request(
        _ client: HTTPClient, _ method: HTTPMethod, _ url: String, body: String? = nil
    ) async throws -> String {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(300))
        } catch {
            throw LoadError.httpFailed(url: url, reason: "\(error)")
        }
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard (200..<300).contains(response.status.code) else {
            throw LoadError.httpFailed(url: url, reason: "status \(response.status.code): \(text)")
        }
        return text
    }
}

/// One store's load times.
struct TreeLoadFigure: Encodable {
    var store: String
    var loadMilliseconds: [Double]
    var leaves: Int

    var medianMilliseconds: Double {
        let sorted = loadMilliseconds.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The median scaled to 100,000 leaves (the load is linear in the leaves).
    var millisecondsPer100kLeaves: Double { medianMilliseconds * 100_000 / Double(leaves) }

    func describe() -> String {
        "\(store): tree load after a restart, \(leaves) leaves, \(loadMilliseconds.count) rounds: "
            + String(
                format: "median %.0f ms (min %.0f, max %.0f), %.0f ms per 100k leaves", medianMilliseconds,
                loadMilliseconds.min() ?? 0, loadMilliseconds.max() ?? 0, millisecondsPer100kLeaves)
    }

    enum CodingKeys: String, CodingKey {
        case store, loadMilliseconds, leaves, medianMilliseconds, millisecondsPer100kLeaves
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(store, forKey: .store)
        try container.encode(loadMilliseconds, forKey: .loadMilliseconds)
        try container.encode(leaves, forKey: .leaves)
        try container.encode(medianMilliseconds, forKey: .medianMilliseconds)
        try container.encode(millisecondsPer100kLeaves, forKey: .millisecondsPer100kLeaves)
    }
}

struct TreeLoadReport: Encodable {
    var scenario: String
    var leaves: Int
    var machine: MachineInfo
    var stores: [TreeLoadFigure]
}
