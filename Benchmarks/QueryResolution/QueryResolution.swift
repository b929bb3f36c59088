import Benchmark
import Query
import ServerStorage
import Tree

// How a limited, ordered query is resolved over a large node, and what keeping the index costs
// on every write. Each indexed figure has a naive baseline in the same run, on the same data, so
// the ratio between them holds even on a noisy machine.

/// `orderByChild("score")`: the index every benchmark here queries or maintains.
let scoreIndex = Index.child("score")
/// `orderByChild("score").limitToLast(50)`: the fifty best scores.
let topScores = QueryParams(index: scoreIndex, limit: .last(50))

let benchmarks: @Sendable () -> Void = {
    // Microsecond operations run a thousand times per measured iteration so the clock's own cost
    // stays out of the figures; results are reported per operation.
    let fast = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000
    )
    // Operations of tens to hundreds of microseconds: one per measured iteration is enough.
    let medium = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 10,
        maxDuration: .seconds(2),
        maxIterations: 10_000
    )
    let slow = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.mallocCountTotal: .count],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 1_000
    )
    // A full sort of 100k children takes the better part of a second: one warmup iteration (the
    // first run of a code path also allocates the runtime's metadata for its generic types, once
    // per process, which is not what a checked allocation count is about), a longer budget, so
    // that a loaded machine still gives a few samples. CPU time (to the scheduler tick) is
    // recorded too: on a loaded machine a sample this long spends part of its wall time waiting.
    var slowest = slow
    slowest.metrics.append(.cpuTotal)
    slowest.warmupIterations = 1
    slowest.maxDuration = .seconds(5)

    for count in [1_000, 100_000] {
        let size = "\(count / 1_000)k"

        // What a view does with a complete node (`View.init`, a server answering a query): run the
        // query's filter, which walks the node's maintained score index from the end.
        Benchmark("limitToLast(50) indexed filter \(size)", configuration: medium) {
            (_: Benchmark, fixture: QueryFixture) in
            blackHole(filterWindow(fixture.node, fixture.filter))
        } setup: {
            QueryFixture(count: count, indexed: true)
        }

        // The same window read straight off the index, without building the result node.
        Benchmark("limitToLast(50) index walk \(size)", configuration: fast) {
            (benchmark: Benchmark, fixture: QueryFixture) in
            for _ in benchmark.scaledIterations {
                blackHole(indexWalk(fixture.node))
            }
        } setup: {
            QueryFixture(count: count, indexed: true)
        }

        Benchmark("limitToLast(50) naive sort \(size)", configuration: count > 1_000 ? slowest : slow) {
            (_: Benchmark, fixture: QueryFixture) in
            blackHole(naiveWindow(fixture.node))
        } setup: {
            QueryFixture(count: count, indexed: false)
        }
    }

    // What the first ordered query on a node pays once: sorting every child into the index (plus
    // one walk of the children for the fresh node, small beside the sort).
    Benchmark("score index build 100k", configuration: slowest) { (_: Benchmark, node: Node) in
        let fresh = Node(map: node.children, priority: nil)
        Leaderboard.buildIndex(fresh)
        blackHole(fresh)
    } setup: {
        Leaderboard.node(count: 100_000)
    }

    // Each iteration changes one child of the same node to a new score; the inputs are made in
    // setup so only the update is measured. Two sizes show how each cost grows with the node.
    for count in [1_000, 100_000] {
        let size = "\(count / 1_000)k"

        Benchmark("updatingChild \(size) no index", configuration: fast) {
            (benchmark: Benchmark, fixture: UpdateFixture) in
            for iteration in benchmark.scaledIterations {
                let change = fixture.changes[iteration % fixture.changes.count]
                blackHole(fixture.node.updatingChild(change.key, to: change.child))
            }
        } setup: {
            UpdateFixture(count: count, indexed: false)
        }

        Benchmark("updatingChild \(size) score index", configuration: fast) {
            (benchmark: Benchmark, fixture: UpdateFixture) in
            for iteration in benchmark.scaledIterations {
                let change = fixture.changes[iteration % fixture.changes.count]
                blackHole(fixture.node.updatingChild(change.key, to: change.child))
            }
        } setup: {
            UpdateFixture(count: count, indexed: true)
        }

        // The naive persistent update: copy a plain dictionary of every child, then change one entry.
        Benchmark("Dictionary copy+update \(size)", configuration: slow) {
            (benchmark: Benchmark, fixture: UpdateFixture) in
            let change = fixture.changes[benchmark.currentIteration % fixture.changes.count]
            var copy = fixture.dictionary
            copy[change.key] = change.child
            blackHole(copy)
        } setup: {
            UpdateFixture(count: count, indexed: false)
        }
    }

    // A server applying writes: one leaf of a 100-by-1,000 tree (`load/w<i>/k<j>`, as `canopy-load
    // writes` makes) overwritten at a time, in place (no one else holds the tree) and as a
    // persistent update that keeps the old tree whole.
    Benchmark("Node.update in place, 100k leaves at depth 3", configuration: fast) {
        (benchmark: Benchmark, fixture: WriteFixture) in
        for iteration in benchmark.scaledIterations {
            fixture.tree.update(at: fixture.path(iteration), to: fixture.leaf)
        }
    } setup: {
        WriteFixture()
    }

    Benchmark("Node.updating, 100k leaves at depth 3", configuration: fast) {
        (benchmark: Benchmark, fixture: WriteFixture) in
        for iteration in benchmark.scaledIterations {
            fixture.tree = fixture.tree.updating(at: fixture.path(iteration), to: fixture.leaf)
        }
    } setup: {
        WriteFixture()
    }

    // What `--in-memory` keeps beside the database's own tree: every acknowledged write is also
    // committed to it, and should change it in place as the database changes its own.
    Benchmark("InMemoryServerStore.commit of one leaf, 100k leaves at depth 3", configuration: fast) {
        (benchmark: Benchmark, fixture: StoreFixture) in
        for iteration in benchmark.scaledIterations {
            try fixture.store.commit([StoredWrite(path: fixture.writes.path(iteration), node: fixture.writes.leaf)])
        }
    } setup: {
        StoreFixture()
    }
}

/// An in-memory store holding the tree of a ``WriteFixture``, which the database that loaded it
/// also holds (as a server's database holds what it loaded from its store).
struct StoreFixture {
    let writes = WriteFixture()
    let store: InMemoryServerStore

    init() {
        store = InMemoryServerStore(tree: writes.tree)
    }
}

/// A tree of 100 × 1,000 leaves that the benchmark keeps changing (the benchmark runs it on one
/// thread at a time).
final class WriteFixture: @unchecked Sendable {
    var tree = Node.empty
    let paths: [Path]
    let leaf = Node(.number(1))

    init() {
        paths = (0..<100).flatMap { writer in (0..<1_000).map { Path("load/w\(writer)/k\($0)") } }
        for (number, path) in paths.enumerated() { tree.update(at: path, to: Node(.number(Double(number)))) }
    }

    /// The path of the `iteration`th write, spread over the tree.
    func path(_ iteration: Int) -> Path { paths[(iteration &* 7_919) % paths.count] }
}

/// A leaderboard node to query, with the score index built on it or not.
struct QueryFixture {
    let node: Node
    let filter: any NodeFilter

    init(count: Int, indexed: Bool) {
        node = Leaderboard.node(count: count)
        filter = topScores.nodeFilter
        if indexed {
            Leaderboard.buildIndex(node)
            let window = keys(filterWindow(node, filter))
            precondition(window == keys(naiveWindow(node)), "indexed and naive windows disagree")
            precondition(window == indexWalk(node).map(\.name).sorted(), "index walk and filter disagree")
        }
    }
}

/// A leaderboard node to update, the same children as a dictionary, and the updates to make.
struct UpdateFixture {
    let node: Node
    let dictionary: [ChildKey: Node]
    let changes: [(key: ChildKey, child: Node)]

    init(count: Int, indexed: Bool) {
        node = Leaderboard.node(count: count)
        var dictionary: [ChildKey: Node] = [:]
        dictionary.reserveCapacity(node.childCount)
        for (key, child) in node.children { dictionary[key] = child }
        self.dictionary = dictionary
        changes = Leaderboard.changes(of: node)
        if indexed {
            Leaderboard.buildIndex(node)
            let changed = node.updatingChild(changes[0].key, to: changes[0].child)
            precondition(changed.hasBuiltIndex(scoreIndex), "an update dropped the index")
        } else {
            precondition(!node.hasBuiltIndex(scoreIndex))
        }
    }
}

/// The query's filter applied to a complete node, as a view does when it is created.
func filterWindow(_ node: Node, _ filter: any NodeFilter) -> Node {
    var none: ChildChangeAccumulator?
    return filter.updateFullNode(.empty, node, accumulator: &none)
}

/// The last fifty children in score order, read off the node's index (highest score first).
func indexWalk(_ node: Node) -> [NamedNode] {
    Array(node.children(in: scoreIndex, reverse: true).prefix(50))
}

/// The baseline without an index: read every child, sort them all in the protocol's order (score,
/// then key on a tie), keep the last fifty.
func naiveWindow(_ node: Node) -> Node {
    var all: [NamedNode] = []
    all.reserveCapacity(node.childCount)
    for (key, child) in node.children { all.append(NamedNode(name: key, node: child)) }
    all.sort { scoreIndex.compare($0, $1) < 0 }
    return Node(children: all.suffix(50).map { ($0.name, $0.node) })
}

func keys(_ node: Node) -> [ChildKey] {
    Array(node.children.keys)
}

/// A game's leaderboard: children keyed by push id, each `{"name": "player-7", "score": 4821}`.
enum Leaderboard {
    /// A node of `count` players, keys and scores drawn from a fixed seed, so every run measures
    /// the same data.
    static func node(count: Int) -> Node {
        var random = SplitMix64(seed: 0x5EED)
        return Node(
            children: (0..<count).lazy.map { number in
                let key = pushID(time: 1_700_000_000_000 + Int64(number), using: &random)
                return (key, player(number, score: Int.random(in: 0..<1_000_000, using: &random)))
            })
    }

    /// A key shaped like a push id (`PushIDGenerator` draws its random part from the system, which
    /// would change the data from run to run).
    static func pushID(time: Int64, using random: inout SplitMix64) -> ChildKey {
        let alphabet = PushIDGenerator.alphabet
        var bytes = [UInt8](repeating: 0, count: 20)
        var remaining = time
        for index in stride(from: 7, through: 0, by: -1) {
            bytes[index] = alphabet[Int(remaining % 64)]
            remaining /= 64
        }
        for index in 8..<20 { bytes[index] = alphabet[Int.random(in: 0..<64, using: &random)] }
        return ChildKey(String(decoding: bytes, as: UTF8.self))
    }

    static func player(_ number: Int, score: Int) -> Node {
        Node(children: [
            (ChildKey("name"), Node(.string("player-\(number)"))),
            (ChildKey("score"), Node(.number(Double(score)))),
        ])
    }

    /// Builds the score index on `node` (the first ordered read does, and keeps it with the node).
    static func buildIndex(_ node: Node) {
        _ = node.lastChild(in: scoreIndex)
        precondition(node.hasBuiltIndex(scoreIndex))
    }

    /// 1,024 updates to existing players of `node`, each to a new score.
    static func changes(of node: Node) -> [(key: ChildKey, child: Node)] {
        var random = SplitMix64(seed: 0xC0FFEE)
        let keys = Array(node.children.keys)
        return (0..<1_024).map { number in
            let key = keys[Int.random(in: 0..<keys.count, using: &random)]
            return (key, player(number, score: Int.random(in: 0..<1_000_000, using: &random)))
        }
    }
}

/// SplitMix64, a small seeded generator: the standard library's own is not seedable.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
