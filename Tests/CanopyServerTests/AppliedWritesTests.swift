import ServerStorage
import Testing
import Transport

@testable import CanopyServer

/// The memory of which named writes ran: exact for recent ones, bounded against clients that make
/// up ids or send refused writes on purpose.
struct AppliedWritesTests {
    @Test func appliedWritesCostNothingAndRefusalsAreRememberedExactly() {
        let applied = AppliedWrites()
        let refusal = WriteError(status: .invalidData, message: "no")
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
        let refusal = WriteError(status: .permissionDenied, message: String(repeating: "x", count: 100))
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

    /// What is stored of a client, read back into a fresh memory (a restart, or another process
    /// taking the namespace over), answers every write as the first memory did.
    @Test func whatIsStoredAnswersAsTheMemoryItCameFrom() {
        let applied = AppliedWrites()
        let refusal = WriteError(status: .permissionDenied, message: "Permission denied")
        for sequence in 1...40 {
            let disposition: AppliedWrites.Disposition =
                sequence % 10 == 3 ? .refused(refusal) : sequence % 10 == 7 ? .stale : .applied
            applied.record(WriteID(client: "device", sequence: sequence), disposition)
        }
        applied.record(WriteID(client: "other", sequence: 5), .applied)
        let changes = applied.changes(for: ["device", "other"], seen: 1_000)
        #expect(changes.count == 2)
        guard case .store(let device)? = changes.first(where: { $0.client == "device" }) else {
            Issue.record("no record of device: \(changes)")
            return
        }
        #expect(device.highest == 40 && device.notApplied.count == 8 && device.seen == 1_000)

        let restored = AppliedWrites()
        restored.restore(changes.compactMap { if case .store(let ids) = $0 { ids } else { nil } })
        for sequence in 0...41 {
            let id = WriteID(client: "device", sequence: sequence)
            #expect(restored.disposition(of: id) == applied.disposition(of: id), "write \(sequence)")
        }
        #expect(restored.disposition(of: WriteID(client: "other", sequence: 5)) == .applied)
        #expect(restored.disposition(of: WriteID(client: "other", sequence: 6)) == nil)
        #expect(restored.recordCount == 8)
        #expect(restored.changes(for: [], seen: 0) == [], "nothing forgotten, nothing asked for")
    }

    /// Clients forgotten past the limit are removed from the store with the next changes, once.
    @Test func forgottenClientsAreRemovedFromTheStore() {
        let applied = AppliedWrites()
        for client in 0...AppliedWrites.clientLimit {
            applied.record(WriteID(client: "c\(client)", sequence: 1), .applied)
        }
        #expect(applied.clientCount <= AppliedWrites.clientLimit / 2 + 1)
        let changes = applied.changes(for: ["c\(AppliedWrites.clientLimit)"], seen: 1)
        let forgotten = Set(changes.compactMap { if case .forget(let client) = $0 { client } else { nil } })
        #expect(forgotten.count == AppliedWrites.clientLimit + 1 - applied.clientCount)
        #expect(forgotten.contains("c0"), "the least recently seen go first")
        #expect(changes.last?.client == "c\(AppliedWrites.clientLimit)", "stored after the forgotten")
        #expect(applied.changes(for: [], seen: 2) == [])
    }

    /// A store holding more clients than the limit (written under another limit) is brought
    /// within it when read, and the clients left out are removed from it.
    @Test func restoringMoreThanTheLimitForgetsTheLeastRecentlySeen() {
        let applied = AppliedWrites()
        let stored = (0..<(AppliedWrites.clientLimit + 10)).map {
            StoredWriteIDs(client: "c\($0)", highest: 1, seen: Int64($0))
        }
        applied.restore(stored)
        #expect(applied.clientCount <= AppliedWrites.clientLimit)
        #expect(applied.disposition(of: WriteID(client: "c\(AppliedWrites.clientLimit + 9)", sequence: 1)) == .applied)
        #expect(applied.disposition(of: WriteID(client: "c0", sequence: 1)) == nil)
        let forgets = applied.changes(for: [], seen: 0)
        #expect(forgets.count == AppliedWrites.clientLimit + 10 - applied.clientCount)
    }
}
