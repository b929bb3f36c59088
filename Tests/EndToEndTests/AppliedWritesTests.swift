import Testing
import Transport

@testable import CanopyServer

/// The memory of which named writes ran: exact for recent ones, bounded against clients that make
/// up ids or send refused writes on purpose.
struct AppliedWritesTests {
    @Test func appliedWritesCostNothingAndRefusalsAreRememberedExactly() {
        let applied = AppliedWrites()
        let refusal = WriteError(status: "invalid_data", message: "no")
        for sequence in 0..<5_000 {
            applied.record(WriteID(client: "c", sequence: sequence), sequence == 4_990 ? .refused(refusal) : .applied)
        }
        #expect(applied.recordCount == 1, "only the refusal is stored")
        #expect(applied.disposition(of: WriteID(client: "c", sequence: 4_990)) == .refused(refusal))
        #expect(applied.disposition(of: WriteID(client: "c", sequence: 4_991)) == .applied)
        #expect(applied.disposition(of: WriteID(client: "c", sequence: 5_000)) == nil, "not seen yet")
        #expect(applied.disposition(of: WriteID(client: "d", sequence: 0)) == nil)
    }

    @Test func refusalsFromManyMadeUpClientsStayWithinTheBudget() {
        let applied = AppliedWrites()
        let refusal = WriteError(status: "permission_denied", message: String(repeating: "x", count: 100))
        for client in 0..<400 {
            for sequence in 0..<1_000 {
                applied.record(WriteID(client: "hostile-\(client)", sequence: sequence), .stale)
            }
            applied.record(WriteID(client: "hostile-\(client)", sequence: 1_000), .refused(refusal))
        }
        #expect(applied.recordCount <= AppliedWrites.recordLimit)
        #expect(applied.clientCount < 400, "the least recently seen were forgotten")
        // The most recent client is still answered exactly.
        #expect(applied.disposition(of: WriteID(client: "hostile-399", sequence: 1_000)) == .refused(refusal))
        #expect(applied.disposition(of: WriteID(client: "hostile-399", sequence: 10)) == .stale)
    }
}
