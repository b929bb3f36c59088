import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

@testable import Canopy

/// `getData(source:)` without a server: the device answers at once from what it holds completely
/// (in memory, or on disk from an earlier run), and refuses what it holds only in part.
@Suite(.timeLimit(.minutes(2)))
struct OfflineReadTests {
    /// A first run listens to `rooms`, then the server goes down and a new run (a new `Database`
    /// on the same file) reads.
    static func withRoomsCachedAndTheServerDown(_ body: (Database, TestServer) async throws -> Void) async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                let writer = makeDatabase(server)
                try await writer.reference(withPath: "rooms").setValue([
                    "a": ["topic": "gardens", "count": 1], "b": ["topic": "bees"],
                ])
                try await writer.reference(withPath: "lobby").setValue("open")
                writer.shutDown()
                let first = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let seen = Recorder<UInt>()
                first.reference(withPath: "rooms").observe(.value) { seen.record($0.childrenCount) }
                #expect(await seen.wait { $0.last == 2 })
                #expect(await OfflineTests.waitUntilKeptComplete(first, "rooms"))
                first.shutDown()
                await server.stop()

                let offline = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                defer { offline.shutDown() }
                try await body(offline, server)
            }
        }
    }

    @Test func aNewRunReadsALocationAListenerCompletedAndItsChildrenFromTheDisk() async throws {
        try await Self.withRoomsCachedAndTheServerDown { offline, _ in
            let rooms = try await offline.reference(withPath: "rooms").getData()
            #expect(rooms.childrenCount == 2)
            #expect(rooms.childSnapshot(forPath: "b/topic").value as? String == "bees")
            let room = try await offline.reference(withPath: "rooms/a").getData()
            #expect(room.childSnapshot(forPath: "topic").value as? String == "gardens")
            #expect(room.childSnapshot(forPath: "count").value as? Int == 1 && room.childrenCount == 2)
            let topic = try await offline.reference(withPath: "rooms/a/topic").getData()
            #expect(topic.value as? String == "gardens")
            // Within a complete location, a missing child is known to be empty.
            #expect(try await offline.reference(withPath: "rooms/c").getData().exists() == false)
            let cached = try await offline.reference(withPath: "rooms/a/count").getData(source: .cache)
            #expect(cached.value as? Int == 1)
        }
    }

    @Test func aParentTheDeviceHoldsOnlyInPartIsAnErrorNotPartialData() async throws {
        try await Self.withRoomsCachedAndTheServerDown { offline, _ in
            // The root holds `rooms` but not `lobby`: not complete.
            await #expect(throws: DatabaseError.offline("/")) { try await offline.reference().getData() }
            await #expect(throws: DatabaseError.notCached("/")) {
                try await offline.reference().getData(source: .cache)
            }
            await #expect(throws: DatabaseError.offline("/lobby")) {
                try await offline.reference(withPath: "lobby").getData()
            }
            // `.server` never answers from the device.
            await #expect(throws: DatabaseError.offline("/rooms")) {
                try await offline.reference(withPath: "rooms").getData(source: .server)
            }
            let answers = Recorder<String>()
            offline.reference(withPath: "rooms/a/topic").getData(source: .cache) { error, snapshot in
                answers.record(error.map { "\($0)" } ?? snapshot?.value as? String ?? "-")
            }
            offline.reference().getData { error, snapshot in
                answers.record(error.map { "\($0)" } ?? "\(snapshot?.value ?? "-")")
            }
            #expect(
                await answers.wait {
                    Set($0) == ["gardens", "\(DatabaseError.offline("/"))"]
                }, "\(answers.all)")
        }
    }

    /// Writes made offline, and those restored in the next run, lie over the disk's data.
    @Test func offlineReadsIncludePendingAndRestoredWrites() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                try await makeDatabase(server).reference(withPath: "rooms/a").setValue(["topic": "gardens"])
                let first = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let seen = Recorder<String>()
                first.reference(withPath: "rooms/a").observe(.value) {
                    seen.record($0.childSnapshot(forPath: "topic").value as? String ?? "-")
                }
                #expect(await seen.wait { $0.last == "gardens" })
                #expect(await OfflineTests.waitUntilKeptComplete(first, "rooms/a"))
                first.shutDown()
                await server.stop()

                let second = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                second.reference(withPath: "rooms/a/topic").setValue("ponds") { _, _ in }
                #expect(
                    try await second.reference(withPath: "rooms/a").getData().value as? [String: String] == [
                        "topic": "ponds"
                    ])
                // A write determines the data it sets, even where nothing was cached.
                second.reference(withPath: "notes/n1").setValue("hello") { _, _ in }
                #expect(try await second.reference(withPath: "notes/n1").getData().value as? String == "hello")
                second.shutDown()

                let third = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                defer { third.shutDown() }
                #expect(third.pendingWrites.count == 2)
                #expect(try await third.reference(withPath: "rooms/a/topic").getData().value as? String == "ponds")
                #expect(
                    try await third.reference(withPath: "notes/n1").getData(source: .cache).value as? String == "hello")
            }
        }
    }

    /// A filtered query answers from its own kept window; the location it filters was never complete.
    @Test func aFilteredQueryAnswersFromItsKeptWindowOnly() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                try await makeDatabase(server).reference(withPath: "scores").setValue(["a": 1, "b": 2, "c": 3, "d": 4])
                let first = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let top = Recorder<String>()
                first.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2).observe(.value) {
                    top.record($0.children.compactMap { ($0 as? DataSnapshot)?.key }.joined())
                }
                #expect(await top.wait { $0.last == "cd" })
                #expect(await OfflineTests.waitUntilKeptComplete(first, "scores"))
                first.shutDown()
                await server.stop()

                let offline = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                defer { offline.shutDown() }
                let scores = offline.reference(withPath: "scores")
                let window = try await scores.queryOrderedByValue().queryLimited(toLast: 2).getData()
                #expect(window.children.compactMap { ($0 as? DataSnapshot)?.key } == ["c", "d"])
                await #expect(throws: DatabaseError.offline("/scores")) { try await scores.getData() }
                await #expect(throws: DatabaseError.offline("/scores/d")) { try await scores.child("d").getData() }
                await #expect(throws: DatabaseError.notCached("/scores")) {
                    try await scores.queryOrderedByValue().queryLimited(toLast: 3).getData(source: .cache)
                }
            }
        }
    }

    /// Online, `.default` and `.server` read the server (at start-up too, after the first
    /// connection attempt, rather than answering from an older run's cache), `.cache` never does.
    @Test func eachSourceOnline() async throws {
        try await withServer { server in
            try await OfflineTests.withFolder { folder in
                let writer = makeDatabase(server)
                defer { writer.shutDown() }
                try await writer.reference(withPath: "rooms/a").setValue(["topic": "gardens"])
                let first = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                let seen = Recorder<String>()
                first.reference(withPath: "rooms/a").observe(.value) {
                    seen.record($0.childSnapshot(forPath: "topic").value as? String ?? "-")
                }
                #expect(await seen.wait { $0.last == "gardens" })
                #expect(await OfflineTests.waitUntilKeptComplete(first, "rooms/a"))
                first.shutDown()
                try await writer.reference(withPath: "rooms/a/topic").setValue("ponds")
                try await writer.reference(withPath: "lobby").setValue("open")

                let online = OfflineTests.persistentDatabase(server, folder: folder, network: NetworkSwitch(on: true))
                defer { online.shutDown() }
                // `.default` asks the server once connected, and answers from the device if the
                // connection takes over 3 s (as it once did on a busy machine): connected first.
                let connected = Recorder<Bool>()
                online.reference(withPath: ".info/connected").observe(.value) {
                    connected.record($0.value as? Bool ?? false)
                }
                #expect(await connected.wait(timeout: .seconds(60)) { $0.last == true })
                let topic = online.reference(withPath: "rooms/a/topic")
                #expect(try await topic.getData().value as? String == "ponds")
                #expect(try await topic.getData(source: .cache).value as? String == "gardens")
                #expect(try await topic.getData(source: .server).value as? String == "ponds")
                await #expect(throws: DatabaseError.notCached("/lobby")) {
                    try await online.reference(withPath: "lobby").getData(source: .cache)
                }
                #expect(try await online.reference(withPath: "lobby").getData().value as? String == "open")

                // A listener keeps the device's copy current; offline, `.default` answers from it.
                let live = Recorder<String>()
                online.reference(withPath: "rooms/a/topic").observe(.value) { live.record($0.value as? String ?? "-") }
                #expect(await live.wait { $0.last == "ponds" })
                #expect(try await topic.getData(source: .cache).value as? String == "ponds")
                online.goOffline()
                #expect(try await topic.getData().value as? String == "ponds")
                await #expect(throws: DatabaseError.offline("/rooms/a/topic")) {
                    try await topic.getData(source: .server)
                }
            }
        }
    }
}
