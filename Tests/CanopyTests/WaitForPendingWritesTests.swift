import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

@testable import Canopy

/// `Database.waitForPendingWrites()`.
@Suite(.timeLimit(.minutes(2)))
struct WaitForPendingWritesTests {
    /// Writes kept on the device by a run that had no network are waited for in the next run,
    /// acknowledged or refused.
    @Test func itWaitsForWritesRestoredAfterARestart() async throws {
        try await SnapshotMetadataTests.withLockedServer { server in
            try await OfflineTests.withFolder { folder in
                let first = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: false))
                for index in 0..<3 { first.reference(withPath: "notes/\(index)").setValue(index) { _, _ in } }
                let refused: WriteStatus = first.reference(withPath: "locked").setValue("mine")
                #expect(await refused.isDurable)
                first.shutDown()

                let network = NetworkSwitch(on: false)
                let second = OfflineTests.persistentDatabase(server, folder: folder, network: network)
                defer { second.shutDown() }
                let restored = second.pendingWrites
                #expect(restored.count == 4)
                let waiting = Task { try await second.waitForPendingWrites() }
                network.turnOn()
                second.goOnline()
                try await waiting.value
                #expect(restored.allSatisfy { $0.isFinished })
                #expect(second.pendingWrites.isEmpty)
                #expect(try await ServerProbe.value(server, "notes") == [0, 1, 2])
                #expect(try await ServerProbe.value(server, "locked") == "server")
                // With nothing pending it returns at once.
                try await second.waitForPendingWrites()
            }
        }
    }

    @Test func itWaitsForTransactionsAndEndsWhenItsTaskIsCancelled() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            try await database.reference(withPath: "count").setValue(1)
            database.goOffline()
            let committed = Recorder<Bool>()
            database.reference(withPath: "count").runTransactionBlock { data in
                data.value = ((data.value as? Int) ?? 0) + 1
                return .success(withValue: data)
            } andCompletionBlock: { _, done, _ in
                committed.record(done)
            }
            let cancelled = Task { try await database.waitForPendingWrites() }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }

            let waiting = Task { try await database.waitForPendingWrites() }
            database.goOnline()
            try await waiting.value
            #expect(try await ServerProbe.value(server, "count") == 2, "committed before the wait ended")
            #expect(await committed.wait { $0 == [true] }, "\(committed.all)")
            #expect(try await ServerProbe.value(server, "count") == 2)
        }
    }
}
