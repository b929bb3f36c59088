import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

@testable import Canopy

/// The SDK names itself and its version once connected, in the form Firebase's SDKs use
/// (`{"c": {"sdk.js.10-14-1": 1}}`), so a server's connections view shows which SDK a client runs.
struct SDKStatsTests {
    @Test func theConnectionsViewNamesTheSwiftSDKAndItsVersion() async throws {
        try await withServer { server in
            let database = makeDatabase(server)
            defer { database.shutDown() }
            let expected = "sdk.swift." + Database.sdkVersion().replacingOccurrences(of: ".", with: "-")
            // Acknowledged once connected (a write waits for the connection; a read would not).
            _ = try await database.reference(withPath: "anything").setValue(1)
            #expect(
                await eventually {
                    let answer = try await server.http(.GET, "/.console/api/connections?ns=test&auth=owner").json
                    return answer?["connections"]?.arrayValue?.contains { $0["sdk"] == .string(expected) } == true
                })
        }
    }
}
