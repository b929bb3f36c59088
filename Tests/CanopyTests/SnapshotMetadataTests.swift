import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

@testable import Canopy

/// `DataSnapshot.metadata`, `observe(_:includeMetadataChanges:with:)` and
/// `Database.waitForPendingWrites()` against a real server.
@Suite(.timeLimit(.minutes(2)))
struct SnapshotMetadataTests {
    /// What a listener saw: the data (JSON) and its metadata.
    struct Seen: Sendable, Equatable, CustomStringConvertible {
        let data: String
        let isFromCache: Bool
        let hasPendingWrites: Bool

        init(_ snapshot: DataSnapshot) {
            data = snapshot.node.json().serialized()
            isFromCache = snapshot.metadata.isFromCache
            hasPendingWrites = snapshot.metadata.hasPendingWrites
        }

        init(_ data: String, cache: Bool, pending: Bool) {
            self.data = data
            isFromCache = cache
            hasPendingWrites = pending
        }

        var description: String { "\(data)\(isFromCache ? " cache" : "")\(hasPendingWrites ? " pending" : "")" }
    }

    /// A server whose rules refuse writes to `locked` (the admin seeds it over REST).
    static func withLockedServer(_ body: (TestServer) async throws -> Void) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rules = #"{"rules": {".read": true, "notes": {".write": true}, "locked": {".write": false}}}"#
        try rules.write(toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        try await withServer {
            $0.rulesFile = folder + "/rules.json"
        } _: { server in
            let seeded = try await server.http(.PUT, "/locked.json?ns=test&auth=owner", body: #""server""#)
            #expect(seeded.status == 200)
            try await body(server)
        }
    }

    @Test func aWriteMadeOfflineIsPendingAndFromTheCacheUntilAMetadataEventClearsBoth() async throws {
        try await withServer { server in
            try await makeDatabase(server).reference(withPath: "notes/a").setValue("one")
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let notes = database.reference(withPath: "notes")
            let seen = Recorder<Seen>()
            let children = Recorder<String>()
            notes.observe(.value, includeMetadataChanges: true) { snapshot in
                // Children first: a wait on `seen` then finds this event's children recorded too
                // (recorded after, they were once read before the callback got to them).
                let each = snapshot.children.compactMap { $0 as? DataSnapshot }
                children.record(
                    each.map { "\($0.key)\($0.metadata.hasPendingWrites ? "*" : "")" }.joined(separator: ","))
                seen.record(Seen(snapshot))
            }
            let plain = Recorder<Seen>()
            notes.observe(.value) { plain.record(Seen($0)) }
            #expect(await seen.wait { $0.last == Seen(#"{"a":"one"}"#, cache: false, pending: false) }, "\(seen.all)")

            database.goOffline()
            #expect(await seen.wait { $0.last == Seen(#"{"a":"one"}"#, cache: true, pending: false) }, "\(seen.all)")
            notes.child("b").setValue("two") { _, _ in }
            let written = Seen(#"{"a":"one","b":"two"}"#, cache: true, pending: true)
            #expect(await seen.wait { $0.last == written }, "\(seen.all)")
            #expect(children.all.last == "a,b*", "only the child written is pending")

            database.goOnline()
            let confirmed = Seen(#"{"a":"one","b":"two"}"#, cache: false, pending: false)
            #expect(await seen.wait { $0.last == confirmed }, "\(seen.all)")
            let afterWrite = seen.all.drop { $0 != written }
            #expect(afterWrite.allSatisfy { $0.data == written.data }, "metadata-only events: \(seen.all)")
            #expect(afterWrite.count >= 2)
            // Without includeMetadataChanges, only the data changes are told (same queue, so all are in).
            #expect(
                plain.all.map(\.data) == [#"{"a":"one"}"#, #"{"a":"one","b":"two"}"#], "\(plain.all)")
            #expect(plain.all.first?.isFromCache == false && plain.all.last?.hasPendingWrites == true)
        }
    }

    @Test func aRefusedWriteClearsPendingWritesWithTheServersValue() async throws {
        try await Self.withLockedServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let locked = database.reference(withPath: "locked")
            let seen = Recorder<Seen>()
            locked.observe(.value, includeMetadataChanges: true) { seen.record(Seen($0)) }
            #expect(await seen.wait { $0.last == Seen(#""server""#, cache: false, pending: false) }, "\(seen.all)")
            let refused = Recorder<String>()
            locked.setValue("mine") { error, _ in refused.record(error.map { "\($0)" } ?? "ok") }
            #expect(await refused.wait { !$0.isEmpty })
            #expect(refused.all.first?.contains("permission_denied") == true, "\(refused.all)")
            #expect(await seen.wait { $0.last == Seen(#""server""#, cache: false, pending: false) }, "\(seen.all)")
            #expect(seen.all.contains(Seen(#""mine""#, cache: false, pending: true)), "\(seen.all)")
        }
    }

    /// `.childChanged` with `includeMetadataChanges` fires for a child whose metadata alone changed.
    @Test func childChangedTellsAChildWhoseMetadataAloneChanged() async throws {
        try await withServer { server in
            try await makeDatabase(server).reference(withPath: "notes").setValue(["a": "one", "b": "two"])
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let notes = database.reference(withPath: "notes")
            let added = Recorder<String>()
            notes.observe(.childAdded) { added.record($0.ref.url) }
            let changed = Recorder<String>()
            notes.observe(.childChanged, includeMetadataChanges: true) { snapshot in
                changed.record("\(snapshot.key) \(Seen(snapshot))")
            }
            #expect(await added.wait { $0.count == 2 })
            #expect(added.all.first == notes.child("a").url, "a child's reference: \(added.all)")
            database.goOffline()
            #expect(await changed.wait { Set($0) == [#"a "one" cache"#, #"b "two" cache"#] }, "\(changed.all)")
            notes.child("a").setValue("uno") { _, _ in }
            #expect(await changed.wait { $0.last == #"a "uno" cache pending"# }, "\(changed.all)")
            database.goOnline()
            #expect(await changed.wait { $0.contains(#"a "uno""#) && $0.contains(#"b "two""#) }, "\(changed.all)")
            #expect(!changed.all.contains { $0.hasPrefix("b") && $0.contains("pending") })
        }
    }

    @Test func theAsyncSequenceYieldsMetadataChanges() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let ref = database.reference(withPath: "notes/s")
            try await ref.setValue(1)
            database.goOffline()
            ref.setValue(2) { _, _ in }
            var seen: [Seen] = []
            for try await snapshot in ref.values(includeMetadataChanges: true) {
                seen.append(Seen(snapshot))
                if seen.count == 1 { database.goOnline() }
                if seen.last == Seen("2", cache: false, pending: false) { break }
            }
            #expect(seen.first == Seen("2", cache: true, pending: true), "\(seen)")
        }
    }

    /// `getData` tells where its answer came from.
    @Test func getDataSnapshotsSayWhereTheyCameFrom() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let ref = database.reference(withPath: "notes/g")
            try await ref.setValue("server")
            let fromServer = try await ref.getData()
            #expect(fromServer.metadata == SnapshotMetadata(isFromCache: false, hasPendingWrites: false))
            let seen = Recorder<String>()
            database.reference(withPath: "notes").observe(.value) {
                seen.record($0.childSnapshot(forPath: "g").value as? String ?? "-")
            }
            #expect(await seen.wait { $0.last == "server" })
            // A listener the server answered keeps the device's copy current.
            #expect(try await ref.getData(source: .cache).metadata.isFromCache == false)
            database.goOffline()
            ref.setValue("local") { _, _ in }
            let offline = try await ref.getData()
            #expect(offline.value as? String == "local")
            #expect(offline.metadata == SnapshotMetadata(isFromCache: true, hasPendingWrites: true))
            let parent = try await database.reference(withPath: "notes").getData(source: .cache).childSnapshot(
                forPath: "g")
            #expect(parent.metadata.hasPendingWrites)
        }
    }
}
