import Foundation
import Testing
import Transport
import Tree

@testable import Canopy

/// The client half of auth: the token is sent first on each connection and kept on the device;
/// while the server has not accepted it, writes wait (neither sent nor failed). The server here is
/// scripted, so it can refuse tokens.
@Suite(.timeLimit(.minutes(1)))
struct AuthTokenTests {
    static func withFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-auth-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    static func database(_ server: ScriptedServer, folder: URL) throws -> Database {
        let database = Database(url: "http://127.0.0.1:1?ns=auth", connector: server.connector)
        try database.configurePersistence(enabled: true, directory: folder)
        return database
    }

    /// The credential of the request at `index`, if it is an `auth`.
    static func credential(_ link: ScriptedLink, _ index: Int) -> String? {
        guard case .auth(let credential)? = link.request(index)?.action else { return nil }
        return credential
    }

    static func answer(_ link: ScriptedLink, _ index: Int, _ status: ResponseStatus, _ data: JSONValue = "") {
        guard let request = link.request(index) else {
            Issue.record("no request \(index): \(link.requests)")
            return
        }
        link.deliver(.response(number: request.number, status: status, data: data))
    }

    /// A test, or an app, that stops waiting for an acknowledgement is not left hanging: the wait
    /// ends with `CancellationError` and the write stays pending.
    @Test func cancellingAWaitForTheAcknowledgementEndsTheWaitButNotTheWrite() async throws {
        try await Self.withFolder { folder in
            let database = try Self.database(ScriptedServer(), folder: folder)
            let write: WriteStatus = database.reference(withPath: "notes/n1").setValue("hello") { _, _ in }
            let waiting = Task { try await write.acknowledged }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(!write.isFinished)
            #expect(database.pendingWrites.count == 1)
            database.shutDown()
        }
    }

    @Test func aTokenKeptFromTheLastRunThatExpiredOfflineHoldsWritesUntilANewOneIsAccepted() async throws {
        try await Self.withFolder { folder in
            // First run: the app signs in; the token is kept on the device.
            let firstServer = ScriptedServer()
            let first = try Self.database(firstServer, folder: folder)
            first.setAuthToken("token-1")
            first.shutDown()

            // Next run, offline at first: a write is made; then the server says the kept token
            // expired.
            let server = ScriptedServer()
            let database = try Self.database(server, folder: folder)
            let states = Recorder<String>()
            database.observeAuthState { states.record("\($0)") }
            let write: WriteStatus = database.reference(withPath: "notes/n1").setValue("hello") { _, _ in }
            #expect(await write.isDurable)
            database.reference(withPath: "notes").observe(.value) { _ in }
            server.allowConnection()
            let link = try #require(await server.waitForLink(1))
            #expect(await WireConformanceTests.waitFor(link, count: 3), "\(link.requests)")
            #expect(link.requests == ["s ", "auth ", "q notes"], "auth first, writes held: \(link.requests)")
            #expect(Self.credential(link, 1) == "token-1")
            Self.answer(link, 1, .expiredToken, "auth token is expired")
            #expect(await states.wait { $0.last == "token refused (expired_token): auth token is expired" })
            #expect(database.authState.refusal == .expiredToken)
            try await Task.sleep(for: .milliseconds(200))
            #expect(link.requests.count == 3, "the write waits: \(link.requests)")
            #expect(!write.isFinished, "neither sent nor failed")
            #expect(database.pendingWrites.count == 1)

            // The app supplies a new token; once it is accepted, the write goes.
            database.setAuthToken("token-2")
            #expect(await WireConformanceTests.waitFor(link, count: 4))
            #expect(Self.credential(link, 3) == "token-2")
            #expect(link.requests.count == 4, "still held until accepted: \(link.requests)")
            Self.answer(link, 3, .ok)
            #expect(await WireConformanceTests.waitFor(link, count: 5))
            #expect(link.requests.last == "p notes/n1")
            Self.answer(link, 4, .ok)
            try await write.acknowledged
            #expect(database.authState == .authenticated)
            database.shutDown()

            // The new token is the one kept.
            let third = ScriptedServer()
            let restarted = try Self.database(third, folder: folder)
            restarted.reference(withPath: "x").observe(.value) { _ in }
            third.allowConnection()
            let thirdLink = try #require(await third.waitForLink(1))
            #expect(await WireConformanceTests.waitFor(thirdLink, count: 2))
            #expect(Self.credential(thirdLink, 1) == "token-2")
            restarted.shutDown()
        }
    }

    @Test func aTokenRefusedThreeTimesInARowIsNotSentAgain() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=auth", connector: server.connector)
        database.setAuthToken("bad")
        database.reference(withPath: "x").observe(.value) { _ in }
        for connection in 1...4 {
            server.allowConnection()
            let link = try #require(await server.waitForLink(connection))
            #expect(await WireConformanceTests.waitFor(link, count: 2), "\(link.requests)")
            try await Task.sleep(for: .milliseconds(50))
            if connection <= 3 {
                #expect(Self.credential(link, 1) == "bad", "connection \(connection): \(link.requests)")
                Self.answer(link, 1, .invalidToken, "bad signature")
                #expect(await Recorder<Int>().wait(timeout: .seconds(1)) { _ in database.authState != .authenticating })
            } else {
                #expect(link.requests == ["s ", "q x"], "not sent a fourth time: \(link.requests)")
            }
            link.close()
        }
        #expect(database.authState == .refused(status: "invalid_token", reason: "bad signature"))
        #expect(database.authState.refusal == .invalidToken)
        database.shutDown()
    }

    /// The server's status, typed: each known one has its case and spells back the same; any
    /// other is kept as it came. Only a refused state has a refusal.
    @Test func aRefusalIsTypedAndKeepsTheStatus() {
        let known: [(String, AuthRefusal)] = [
            ("invalid_token", .invalidToken), ("expired_token", .expiredToken),
            ("permission_denied", .permissionDenied), ("token_provider_failed", .tokenProviderFailed),
        ]
        for (status, refusal) in known {
            #expect(AuthRefusal(status: status) == refusal)
            #expect(refusal.status == status)
            #expect(AuthState.refused(status: status, reason: "why").refusal == refusal)
        }
        #expect(AuthRefusal(status: "quota_exceeded") == .other("quota_exceeded"))
        #expect(AuthRefusal.other("quota_exceeded").status == "quota_exceeded")
        #expect(AuthState.refused(status: "", reason: "").refusal == .other(""))
        for state in [AuthState.signedOut, .authenticating, .authenticated] {
            #expect(state.refusal == nil, "\(state)")
        }
    }

    @Test func signingOutReleasesHeldWritesAndARevokedTokenHoldsNewOnes() async throws {
        let server = ScriptedServer()
        let database = Database(url: "http://127.0.0.1:1?ns=auth", connector: server.connector)
        database.setAuthToken("t")
        server.allowConnection()
        database.reference(withPath: "a").setValue(1) { _, _ in }
        let link = try #require(await server.waitForLink(1))
        #expect(await WireConformanceTests.waitFor(link, count: 2))
        Self.answer(link, 1, .ok)
        #expect(await WireConformanceTests.waitFor(link, count: 3))
        #expect(link.requests == ["s ", "auth ", "p a"])

        // The server revokes the token: the next write waits.
        link.deliver(.authRevoked(status: .expiredToken, reason: "expired"))
        #expect(await Recorder<Int>().wait(timeout: .seconds(2)) { _ in database.authState != .authenticated })
        #expect(database.authState == .refused(status: "expired_token", reason: "expired"))
        #expect(database.authState.refusal == .expiredToken)
        database.reference(withPath: "b").setValue(2) { _, _ in }
        try await Task.sleep(for: .milliseconds(100))
        #expect(link.requests == ["s ", "auth ", "p a"])
        // Signing out sends it unauthenticated.
        database.setAuthToken(nil)
        #expect(await WireConformanceTests.waitFor(link, count: 5))
        #expect(link.requests == ["s ", "auth ", "p a", "unauth ", "p b"])
        #expect(database.authState == .signedOut)
        database.shutDown()
    }
}
