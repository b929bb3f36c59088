import Auth
import CanopyServer
import CanopyTesting
import Foundation
import Synchronization
import Testing

@testable import Canopy

/// The SDK's token provider against a real server that verifies tokens and enforces rules.
@Suite(.timeLimit(.minutes(2)))
struct AuthTokenProviderTests {
    static let rules = #"{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid"}}}}"#

    static func withSecuredServer(_ body: (TestServer) async throws -> Void) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try rules.write(toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        try await withServer { configuration in
            configuration.rulesFile = folder + "/rules.json"
            configuration.authentication.sharedSecret = SignedTokens.secret
            configuration.authentication.isEmulator = false
        } _: { server in
            try await body(server)
        }
    }

    /// What the provider was asked for, in order (`true` = forced refresh).
    final class Calls: Sendable {
        let forced = Mutex<[Bool]>([])
    }

    @Test func anExpiredTokenIsReplacedByTheProviderAndWritesCarryOn() async throws {
        try await Self.withSecuredServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let calls = Calls()
            database.setAuthTokenProvider { forceRefresh in
                calls.forced.withLock { $0.append(forceRefresh) }
                // The first token is valid for about 10 s (its `exp` passed 50 s ago; the server
                // allows 60 s of skew: 3 s was once not enough for a busy machine to write with it);
                // a forced refresh gets an hour.
                return try await SignedTokens.token(uid: "ada", lifetime: forceRefresh ? 3600 : 10 - 60)
            }
            // Only an authenticated ada may write here; on a loaded machine the short first token may
            // already be on its way out when the acknowledgement arrives, so the state is not checked yet.
            try await database.reference(withPath: "users/ada/first").setValue(1)
            #expect(calls.forced.withLock { $0.first } == false)

            // The server revokes the expired token (`ac`); the provider is asked to refresh.
            var refreshed = false
            for _ in 0..<300 where !refreshed {
                try await Task.sleep(for: .milliseconds(100))
                refreshed = calls.forced.withLock { $0.contains(true) } && database.authState == .authenticated
            }
            #expect(refreshed, "calls: \(calls.forced.withLock { $0 }), state: \(database.authState)")
            try await database.reference(withPath: "users/ada/second").setValue(2)
            let snapshot = try await database.reference(withPath: "users/ada").getData()
            #expect(snapshot.value as? [String: Int] == ["first": 1, "second": 2])

            await #expect(throws: DatabaseError.self) {
                try await database.reference(withPath: "users/bob/x").setValue(1)
            }
        }
    }

    @Test func aFailingProviderIsReportedAsARefusal() async throws {
        try await Self.withSecuredServer { server in
            struct NoSession: Error {}
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let states = Recorder<AuthState>()
            database.observeAuthState { states.record($0) }
            database.setAuthTokenProvider { _ in throw NoSession() }
            let reported = await states.wait { $0.contains { $0.refusal == .tokenProviderFailed } }
            #expect(reported, "\(states.all)")
            // The reason names the provider's error.
            #expect(database.authState == .refused(status: "token_provider_failed", reason: "\(NoSession())"))
        }
    }
}
