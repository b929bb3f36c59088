import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Observation
import Synchronization
import Testing

@testable import Canopy

/// ``LiveQuery`` against a real server, observed as a SwiftUI view observes it: through
/// `withObservationTracking`.
@Suite(.timeLimit(.minutes(2)))
struct LiveQueryTests {
    struct Room: Decodable, Equatable, Sendable {
        var topic: String
    }

    /// Whether Observation reported a change of what `read` reads since ``watch(_:)`` was called.
    final class Change: Sendable {
        private let seen = Mutex(false)
        var happened: Bool { seen.withLock { $0 } }
        func note() { seen.withLock { $0 = true } }
    }

    /// Starts tracking what `read` reads, as a view's body does; the change is reported once.
    @MainActor static func watch(_ read: @MainActor () -> Void) -> Change {
        let change = Change()
        withObservationTracking(read) { change.note() }
        return change
    }

    @Test func theValueArrivesDecodedAndEveryServerChangeIsObserved() async throws {
        try await withServer { server in
            _ = try await server.http(.PUT, "/rooms/a.json?ns=test", body: #"{"topic": "first"}"#)
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let room = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            let arrived = await Self.watch { @MainActor in _ = room.value }
            #expect(await eventually { @MainActor in room.value == Room(topic: "first") })
            #expect(arrived.happened)
            #expect(
                await eventually { @MainActor in
                    room.metadata == SnapshotMetadata(isFromCache: false, hasPendingWrites: false)
                })
            #expect(await MainActor.run { room.snapshot?.key == "a" && room.error == nil && room.isListening })

            let changed = await Self.watch { @MainActor in _ = room.value }
            _ = try await server.http(.PUT, "/rooms/a/topic.json?ns=test", body: #""second""#)
            #expect(await eventually { @MainActor in room.value == Room(topic: "second") })
            #expect(changed.happened)
        }
    }

    @Test func metadataAloneChangesTheModel() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let ref = database.reference(withPath: "rooms/a")
            let room = await LiveQuery<Room>(ref)
            try await ref.setValue(["topic": "online"])
            #expect(
                await eventually { @MainActor in room.value == Room(topic: "online") && !room.metadata.isFromCache })

            database.goOffline()
            ref.child("topic").setValue("offline", withCompletionBlock: { _, _ in })
            #expect(await eventually { @MainActor in room.value == Room(topic: "offline") })
            #expect(await eventually { @MainActor in room.metadata.hasPendingWrites && room.metadata.isFromCache })

            // Back online, the data stays the same: only the metadata changes, and views see it.
            let acknowledged = await Self.watch { @MainActor in _ = room.metadata }
            database.goOnline()
            #expect(
                await eventually { @MainActor in
                    room.metadata == SnapshotMetadata(isFromCache: false, hasPendingWrites: false)
                })
            #expect(acknowledged.happened)
            #expect(await MainActor.run { room.value == Room(topic: "offline") })
        }
    }

    @Test func dataThatDoesNotDecodeIsAnErrorUntilItDoes() async throws {
        try await withServer { server in
            _ = try await server.http(.PUT, "/rooms/a.json?ns=test", body: "5")
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let room = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            #expect(await eventually { @MainActor in room.error is DecodingError })
            #expect(await MainActor.run { room.value == nil && room.snapshot?.value as? Int == 5 && room.isListening })

            _ = try await server.http(.PUT, "/rooms/a.json?ns=test", body: #"{"topic": "fixed"}"#)
            #expect(await eventually { @MainActor in room.value == Room(topic: "fixed") })
            #expect(await MainActor.run { room.error == nil })

            _ = try await server.http(.DELETE, "/rooms/a.json?ns=test")
            #expect(await eventually { @MainActor in room.snapshot?.exists() == false })
            #expect(await MainActor.run { room.value == nil && room.error == nil })
        }
    }

    @Test func aStoppedModelKeepsItsLastValueUntilStartedAgain() async throws {
        try await withServer { server in
            _ = try await server.http(.PUT, "/rooms/a.json?ns=test", body: #"{"topic": "one"}"#)
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let stopped = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            let listening = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            #expect(
                await eventually { @MainActor in
                    stopped.value == Room(topic: "one") && listening.value == Room(topic: "one")
                })

            await stopped.stop()
            #expect(await MainActor.run { !stopped.isListening })
            _ = try await server.http(.PUT, "/rooms/a/topic.json?ns=test", body: #""two""#)
            // The listening model is told; by then the stopped one would have been too.
            #expect(await eventually { @MainActor in listening.value == Room(topic: "two") })
            #expect(await MainActor.run { stopped.value == Room(topic: "one") })

            await stopped.start()
            #expect(await eventually { @MainActor in stopped.value == Room(topic: "two") })
        }
    }

    @Test func aReleasedModelStopsListening() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            var room: LiveQuery<Room>? = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            #expect(await eventually { try await Self.activeListens(server) == 1 })
            #expect(await MainActor.run { room?.isListening == true })
            room = nil
            #expect(await eventually { try await Self.activeListens(server) == 0 })
        }
    }

    /// The server's `canopy_listeners_active` gauge.
    static func activeListens(_ server: TestServer) async throws -> Double? {
        let metrics = try await server.http(.GET, "/metrics").body
        let prefix = "canopy_listeners_active "
        return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
            Double($0.dropFirst(prefix.count))
        }
    }

    @Test func aListenTheRulesRefuseEndsWithTheError() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #"{"rules": {".read": false, ".write": false}}"#.write(
            toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        try await withServer { configuration in
            configuration.rulesFile = folder + "/rules.json"
            configuration.authentication.isEmulator = false
        } _: { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let room = await LiveQuery<Room>(database.reference(withPath: "rooms/a"))
            #expect(await eventually { @MainActor in !room.isListening })
            let error = await MainActor.run { room.error.map { "\($0)" } }
            #expect(
                await MainActor.run { (room.error as? DatabaseError)?.code } == "permission_denied",
                "\(error ?? "no error")")
        }
    }
}
