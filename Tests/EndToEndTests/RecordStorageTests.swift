import CanopyTesting
import Foundation
import Testing
import Tree

/// Small records are stored as one row each (see `Node.packedText`); writes inside them, of a
/// member, a nested member, a priority or a removal, must read the same before and after a
/// restart on the same folder.
@Suite(.timeLimit(.minutes(2)))
struct RecordStorageTests {
    @Test func writesInsideStoredRecordsSurviveARestart() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try await TestServer.start(configuration: TestServer.defaultConfiguration(dataDirectory: folder))
        let writes: [(TestHTTPMethod, String, String)] = [
            (
                .PUT, "/users.json",
                #"{"ada": {"name": "ada", "score": 36, "tags": {"x": true}}, "bob": {"name": "bob"}}"#
            ),
            (.PATCH, "/users/ada.json", #"{"score": 37}"#),
            (.PUT, "/users/ada/tags/y.json", "true"),
            (.PUT, "/users/bob/.priority.json", "5"),
            (.PATCH, "/users/bob.json", #"{"city": "Oslo"}"#),
            (.DELETE, "/users/bob/name.json", ""),
            (.PATCH, "/users.json", #"{"cy": {"name": "cy"}, "dee/name": "dee"}"#),
            (.PUT, "/users/cy/name/first.json", #""Cy""#),
            (.DELETE, "/users/dee/name.json", ""),
        ]
        for (method, target, body) in writes {
            let response = try await first.http(method, target + "?ns=test", body: body.isEmpty ? nil : body)
            #expect(response.status == 200, "\(method) \(target): \(response.body)")
        }
        let expected = try JSONValue(
            parsing: #"""
                {"ada": {"name": "ada", "score": 37, "tags": {"x": true, "y": true}},
                 "bob": {".priority": 5, "city": "Oslo"},
                 "cy": {"name": {"first": "Cy"}}}
                """#)
        let before = try await first.http(.GET, "/users.json?ns=test&format=export")
        #expect(before.json == expected, "\(before.body)")
        await first.stop()

        let restarted = try await TestServer.start(
            configuration: TestServer.defaultConfiguration(dataDirectory: folder))
        defer { Task { await restarted.stop() } }
        let after = try await restarted.http(.GET, "/users.json?ns=test&format=export")
        #expect(after.json == expected, "\(after.body)")
        let ada = try await restarted.http(.GET, "/users/ada/tags.json?ns=test")
        #expect(ada.body == #"{"x":true,"y":true}"#)
    }
}
