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

/// An update's members are built from its body's bytes (records as they stand, see
/// `Node(canonicalPackedJSON:depth:)`) and, when they are children of one node, set in one walk
/// each (`Node.setChildrenInPlace`): what it stores, echoes and keeps across a restart must be what
/// the parsed body gives.
@Suite(.timeLimit(.minutes(2)))
struct UpdateFromBytesTests {
    @Test func anUpdateReadFromItsBytesWritesWhatItsJSONSays() async throws {
        try await withTestServer { server in
            let body = #"""
                {"a":{"name":"ada","score":36},"b":{ "name" : "bob" },"c":{"score":1,"name":"cy"},
                 "d":{"bio":"line\nfeed","n":1.0},"e":{"at":{".sv":"timestamp"}},"f":{"x":1},"f":{"y":2},
                 "g/h":{"k":true},"i":{"list":[1,2]},"j":{"nothing":null,"v":-0}}
                """#
            let echo = try await server.http(.PATCH, "/u.json?ns=test", body: body)
            #expect(echo.status == 200, "\(echo.body)")
            #expect(echo.json == (try JSONValue(parsing: body)))
            let stored = try await server.http(.GET, "/u.json?ns=test")
            let at = stored.json?["e"]?["at"]?.numberValue ?? 0
            #expect(at > 0)
            let expected = try JSONValue(
                parsing: #"""
                    {"a":{"name":"ada","score":36},"b":{"name":"bob"},"c":{"name":"cy","score":1},
                     "d":{"bio":"line\nfeed","n":1},"e":{"at":\#(JSONValue.format(number: at))},"f":{"y":2},
                     "g":{"h":{"k":true}},"i":{"list":[1,2]},"j":{"v":0}}
                    """#)
            #expect(stored.json == expected, "\(stored.body)")
        }
    }

    @Test func childrenReplacedInPlaceSurviveARestart() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try await TestServer.start(configuration: TestServer.defaultConfiguration(dataDirectory: folder))
        let wide = (0..<40).map { #""k\#($0)":{"n":\#($0)}"# }.joined(separator: ",")
        let writes: [(TestHTTPMethod, String, String)] = [
            (
                .PUT, "/w.json",
                #"{"leaf":1,"record":{"a":1},"big":{\#(wide)},"prio":{".priority":3,"a":1},"deep":{"x":{"y":1}}}"#
            ),
            (.PATCH, "/w.json", #"{"leaf":{"now":"a record"},"record":"a leaf","big":{"small":true},"new":{"a":2}}"#),
            (.PATCH, "/w.json", #"{"prio":{"b":2},"deep":{"x":1},"new":{\#(wide)},"leaf":{"now":"again"}}"#),
            (.PATCH, "/w.json", #"{"record":{"r":{"s":1}},"prio":{".priority":1,"c":1},"other":2}"#),
        ]
        for (method, target, body) in writes {
            let response = try await first.http(method, target + "?ns=test", body: body)
            #expect(response.status == 200, "\(method) \(target): \(response.body)")
        }
        let before = try await first.http(.GET, "/w.json?ns=test&format=export")
        let expected = try JSONValue(
            parsing: #"""
                {"leaf":{"now":"again"},"record":{"r":{"s":1}},"big":{"small":true},"new":{\#(wide)},
                 "prio":{".priority":1,"c":1},"deep":{"x":1},"other":2}
                """#)
        #expect(before.json == expected, "\(before.body)")
        await first.stop()

        let restarted = try await TestServer.start(
            configuration: TestServer.defaultConfiguration(dataDirectory: folder))
        defer { Task { await restarted.stop() } }
        let after = try await restarted.http(.GET, "/w.json?ns=test&format=export")
        #expect(after.json == expected, "\(after.body)")
    }
}
