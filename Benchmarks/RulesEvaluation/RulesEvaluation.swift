import Benchmark
import Foundation
import Rules
import Tree

// What the rules cost one write and one read: the 50-rule document of Benchmarks/Rules checked
// for the write `canopy-load writes` makes (a number at load/w<i>/k<j>, past the root's .write,
// its own .write and .validate), for a chat message (six rules reading root, data and newData),
// and for a read. The baseline in the same run is the allow-everything document a namespace has
// before rules are set. Paths are built before the loop: a check is measured, not path parsing.
// Tools/rules-cost.sh measures the same document against a whole server.

/// The benchmarks' rules file, next to this folder.
let rulesFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Rules/fifty-rules.json")

/// Data in the shape the checks read: 100 writers of 1,000 keys, a room with 1,000 members.
struct RulesFixture: Sendable {
    let rules: RulesDocument
    let root: Node
    let ada = AuthContext(uid: "ada", provider: "password")

    init(rules: RulesDocument) throws {
        self.rules = rules
        var load: [(ChildKey, Node)] = []
        for writer in 0..<100 {
            let keys = (0..<1_000).map { (ChildKey("k\($0)"), Node(.number(Double($0)))) }
            load.append((ChildKey("w\(writer)"), Node(children: keys)))
        }
        let members =
            (0..<1_000).map { (ChildKey("u\($0)"), Node(.bool(true))) } + [(ChildKey("ada"), Node(.bool(true)))]
        let room = Node(children: [
            (ChildKey("owner"), Node(.string("bob"))), (ChildKey("title"), Node(.string("Lobby"))),
            (ChildKey("members"), Node(children: members)),
        ])
        root = Node(children: [
            (ChildKey("load"), Node(children: load)),
            (ChildKey("rooms"), Node(children: [(ChildKey("lobby"), room)])),
        ])
    }

    static func make(_ rules: String) throws -> RulesFixture {
        try RulesFixture(rules: RulesDocument(parsing: rules))
    }
}

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000
    )
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    let documents: [(String, @Sendable () throws -> String)] = [
        ("50 rules", { try String(contentsOf: rulesFile, encoding: .utf8) }),
        ("open rules (baseline)", { #"{"rules": {".read": true, ".write": true}}"# }),
    ]
    for (name, text) in documents {
        Benchmark("canSet load/w7/k42 = 42, \(name)", configuration: configuration) {
            (benchmark: Benchmark, fixture: RulesFixture) in
            let (path, value): (Path, Node) = ("load/w7/k42", Node(.number(42)))
            for _ in benchmark.scaledIterations {
                blackHole(fixture.rules.canSet(path, to: value, auth: nil, root: fixture.root, now: now))
            }
        } setup: {
            try RulesFixture.make(try text())
        }

        Benchmark("canSet a chat message, \(name)", configuration: configuration) {
            (benchmark: Benchmark, fixture: RulesFixture) in
            let message = Node(children: [
                (ChildKey("from"), Node(.string("ada"))), (ChildKey("text"), Node(.string("hello"))),
                (ChildKey("sentAt"), Node(.number(Double(now - 1_000)))),
            ])
            let path: Path = "messages/lobby/m1"
            for _ in benchmark.scaledIterations {
                blackHole(fixture.rules.canSet(path, to: message, auth: fixture.ada, root: fixture.root, now: now))
            }
        } setup: {
            try RulesFixture.make(try text())
        }

        Benchmark("canRead rooms/lobby, \(name)", configuration: configuration) {
            (benchmark: Benchmark, fixture: RulesFixture) in
            let path: Path = "rooms/lobby"
            for _ in benchmark.scaledIterations {
                blackHole(fixture.rules.canRead(path, auth: fixture.ada, root: fixture.root, now: now))
            }
        } setup: {
            try RulesFixture.make(try text())
        }
    }
}
