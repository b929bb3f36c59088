import Rules
import Testing
import Tree

@testable import CanopyServer

/// The log of refused requests keeps the last ones, newest first, and reads from a cursor.
struct RefusalLogTests {
    @Test func theLogKeepsTheLastRefusalsOnly() {
        var log = RefusalLog(capacity: 3)
        #expect(log.refusals().isEmpty && log.lastSequence == 0)
        for index in 1...5 {
            log.record(
                RuleRefusal(
                    time: Double(index), path: Path("/a/\(index)"), operation: .read, uid: nil, authenticated: false,
                    transport: .rest, denial: .notGranted(.read, path: Path("/a/\(index)"), tried: [])))
        }
        #expect(log.refusals().map(\.sequence) == [5, 4, 3])
        #expect(log.refusals().map(\.path) == [Path("/a/5"), Path("/a/4"), Path("/a/3")])
        #expect(log.refusals(after: 3).map(\.sequence) == [5, 4])
        #expect(log.refusals(after: 1).map(\.sequence) == [5, 4, 3])
        #expect(log.refusals(limit: 1).map(\.sequence) == [5])
        #expect(log.lastSequence == 5)
    }
}
