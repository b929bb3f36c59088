import Presence
import Synchronization
import Testing
import Tree

/// Who the operations run as, in these tests.
private enum Person: DisconnectIdentity {
    case anonymous
    case named(String)

    var recordMembers: [String: JSONValue] {
        switch self {
        case .anonymous: [:]
        case .named(let name): ["name": .string(name)]
        }
    }

    init(recordMembers members: [String: JSONValue]) {
        self = members["name"]?.stringValue.map(Person.named) ?? .anonymous
    }
}

/// A database that keeps records (as a store shared by several processes does) in memory, refuses
/// to store while told to, and records what it was asked to run.
private final class RecordingDatabase: DisconnectDatabase {
    private struct State {
        var kept: [String: JSONValue] = [:]
        var runs: [DisconnectRecord<Person>] = []
        var refusing = false
    }

    private struct Refused: Error {}

    let keepsDisconnectRecords: Bool
    private let state = Mutex(State())

    init(keepsRecords: Bool = true) { keepsDisconnectRecords = keepsRecords }

    var kept: [String: JSONValue] { state.withLock { $0.kept } }
    var runs: [DisconnectRecord<Person>] { state.withLock { $0.runs } }

    func refuse(_ refusing: Bool) { state.withLock { $0.refusing = refusing } }

    func keep(session: String, current: @Sendable () -> DisconnectRecord<Person>?) async -> (any Error)? {
        state.withLock { state in
            if state.refusing { return Refused() }
            guard let record = current() else { return nil }
            if record.operations.isEmpty {
                state.kept.removeValue(forKey: session)
            } else {
                state.kept[session] = record.json
            }
            return nil
        }
    }

    func run(_ record: DisconnectRecord<Person>, session: String?) async {
        state.withLock { state in
            state.runs.append(record)
            if let session { state.kept.removeValue(forKey: session) }
        }
    }
}

struct ConnectionPresenceTests {
    private static let offline = DisconnectOperation(path: "users/ada/online", kind: .set(false))
    private static let leave = DisconnectOperation(path: "rooms/lobby", kind: .update(["ada": .null]))

    @Test func operationsRunOnceAsTheIdentityOfTheEndWhoeverAsksFirst() async throws {
        let database = RecordingDatabase()
        let presence = ConnectionPresence(session: "s1", identity: Person.anonymous)
        try await presence.register(Self.offline, limit: 1000, on: database)
        presence.identify(as: .named("ada"))
        await presence.keep(on: database)
        // The close and a newer connection naming the session ask together.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { await presence.run(on: database) } }
        }
        #expect(database.runs == [DisconnectRecord(operations: [Self.offline], identity: .named("ada"))])
        #expect(database.kept.isEmpty)
        // Nothing registered afterwards is kept or run.
        try await presence.register(Self.leave, limit: 1000, on: database)
        await presence.run(on: database)
        #expect(database.runs.count == 1)
        #expect(database.kept.isEmpty)
        #expect(presence.record == nil)
    }

    @Test func theStoredRecordFollowsEachChangeAndReadsBack() async throws {
        let database = RecordingDatabase()
        let presence = ConnectionPresence(session: "s1", identity: Person.named("ada"))
        try await presence.register(Self.offline, limit: 1000, on: database)
        try await presence.register(Self.leave, limit: 1000, on: database)
        let stored = try #require(database.kept["s1"])
        #expect(
            DisconnectRecord<Person>(json: stored)
                == DisconnectRecord(operations: [Self.offline, Self.leave], identity: .named("ada")))
        try await presence.cancel(below: "users", on: database)
        #expect(database.kept["s1"].flatMap(DisconnectRecord<Person>.init(json:))?.operations == [Self.leave])
        try await presence.cancel(below: .root, on: database)
        #expect(database.kept["s1"] == nil)
    }

    @Test func aChangeTheStoreRefusesIsUndone() async throws {
        let database = RecordingDatabase()
        let presence = ConnectionPresence(session: "s1", identity: Person.anonymous)
        try await presence.register(Self.offline, limit: 1000, on: database)
        database.refuse(true)
        await #expect(throws: DisconnectRefusal.self) {
            try await presence.register(Self.leave, limit: 1000, on: database)
        }
        await #expect(throws: DisconnectRefusal.self) { try await presence.cancel(below: .root, on: database) }
        #expect(presence.operations.operations == [Self.offline])
        database.refuse(false)
        await presence.run(on: database)
        #expect(database.runs.map(\.operations) == [[Self.offline]])
    }

    @Test func operationsPastTheLimitAreRefusedAndChangeNothing() async throws {
        let database = RecordingDatabase(keepsRecords: false)
        let presence = ConnectionPresence(session: "s1", identity: Person.anonymous)
        try await presence.register(Self.offline, limit: Self.offline.byteCount, on: database)
        do {
            try await presence.register(Self.leave, limit: Self.offline.byteCount, on: database)
            Issue.record("an operation past the limit was registered")
        } catch .tooBig(let limit) {
            #expect(limit == Self.offline.byteCount)
        } catch {
            Issue.record("refused for another reason: \(error)")
        }
        #expect(presence.operations.operations == [Self.offline])
        // A database that keeps no records is asked to store nothing.
        #expect(database.kept.isEmpty)
    }

    @Test func anExpiryDoesNotUndoANewerIdentityNorOneAfterTheEnd() async {
        let database = RecordingDatabase()
        let presence = ConnectionPresence(session: "s1", identity: Person.anonymous)
        let first = presence.identify(as: .named("ada"))
        let second = presence.identify(as: .named("grace"))
        #expect(!presence.replace(first, with: .anonymous))
        #expect(presence.identity == .named("grace"))
        #expect(presence.replace(second, with: .anonymous))
        #expect(presence.identity == .anonymous)
        let third = presence.identify(as: .named("ada"))
        await presence.run(on: database)
        #expect(!presence.isCurrent(third))
        #expect(!presence.replace(third, with: .anonymous))
    }
}
