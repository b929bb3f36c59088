import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

/// The REST dialect: methods, print modes, shallow and export reads, errors, rules, health, metrics.
struct RESTTests {
    static let invalidData = #"{"error":"Invalid data; couldn't parse JSON object, array, or value."}"#

    @Test func putAnswersTheWrittenValueAndGetReadsIt() async throws {
        try await withTestServer { server in
            let put = try await server.http(.PUT, "/users/ada.json", body: #"{"name":"Ada","age":36,"tags":["a","b"]}"#)
            #expect(put.status == 200)
            #expect(put.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(put.json == ["name": "Ada", "age": 36, "tags": ["a", "b"]])

            let get = try await server.http(.GET, "/users/ada.json")
            #expect(get.status == 200)
            #expect(get.json == ["name": "Ada", "age": 36, "tags": ["a", "b"]])
            #expect(try await server.http(.GET, "/users/ada/age.json").body == "36")
            #expect(
                try await server.http(.GET, "/.json").json == [
                    "users": ["ada": ["name": "Ada", "age": 36, "tags": ["a", "b"]]]
                ])
            #expect(try await server.http(.GET, "/missing.json").body == "null")
        }
    }

    @Test func numbersAndArraysRenderAsTheOfficialServerDoes() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/n.json", body: #"{"int":1.0,"big":1e3,"frac":2.5,"neg":-0.5}"#)
            let numbers = try await server.http(.GET, "/n.json")
            #expect(numbers.body == #"{"big":1000,"frac":2.5,"int":1,"neg":-0.5}"#)

            _ = try await server.http(.PUT, "/dense.json", body: #"{"0":"a","2":"c","1":"b"}"#)
            #expect(try await server.http(.GET, "/dense.json").json == ["a", "b", "c"])
            _ = try await server.http(.PUT, "/holey.json", body: #"{"0":"a","2":"c"}"#)
            #expect(try await server.http(.GET, "/holey.json").json == ["a", nil, "c"])
            _ = try await server.http(.PUT, "/sparse.json", body: #"{"0":"a","5":"f"}"#)
            #expect(try await server.http(.GET, "/sparse.json").json == ["0": "a", "5": "f"])
            _ = try await server.http(.PUT, "/arr.json", body: #"[1,null,3]"#)
            #expect(try await server.http(.GET, "/arr.json").json == [1, nil, 3])
            #expect(try await server.http(.GET, "/arr/1.json").json == .null)
        }
    }

    @Test func patchIsAMultiPathUpdateAndAnswersThePatch() async throws {
        try await withTestServer { server in
            _ = try await server.http(
                .PUT, "/users.json", body: #"{"ada":{"name":"Ada","age":36},"eve":{"name":"Eve"}}"#)
            let patch = try await server.http(
                .PATCH, "/users.json", body: #"{"ada/age":37,"bob":{"name":"Bob"},"eve":null}"#)
            #expect(patch.status == 200)
            #expect(patch.json == ["ada/age": 37, "bob": ["name": "Bob"], "eve": nil])
            #expect(
                try await server.http(.GET, "/users.json").json
                    == ["ada": ["name": "Ada", "age": 37], "bob": ["name": "Bob"]])
        }
    }

    @Test func postPushesUnderANewChronologicalID() async throws {
        try await withTestServer { server in
            var names: [String] = []
            for text in ["one", "two", "three"] {
                let post = try await server.http(.POST, "/messages.json", body: #"{"text":"\#(text)"}"#)
                #expect(post.status == 200)
                let name = try #require(post.json?["name"]?.stringValue)
                #expect(name.count == 20)
                let alphabet = Set("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
                #expect(name.allSatisfy { alphabet.contains($0) })
                names.append(name)
            }
            #expect(names == names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }))
            #expect(Set(names).count == 3)
            #expect(try await server.http(.GET, "/messages/\(names[1]).json").json == ["text": "two"])
        }
    }

    @Test func deleteAnswersNullAndRemoves() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/a.json", body: #"{"b":1,"c":2}"#)
            let delete = try await server.http(.DELETE, "/a/b.json")
            #expect(delete.status == 200)
            #expect(delete.body == "null")
            #expect(try await server.http(.GET, "/a.json").json == ["c": 2])
        }
    }

    @Test func printSilentAnswers204WithoutABody() async throws {
        try await withTestServer { server in
            for (method, body): (TestHTTPMethod, String?) in [
                (.PUT, "1"), (.PATCH, #"{"y":2}"#), (.POST, "3"), (.DELETE, nil),
            ] {
                let response = try await server.http(method, "/s/x.json?print=silent", body: body)
                #expect(response.status == 204, "\(method)")
                #expect(response.body.isEmpty, "\(method)")
            }
            _ = try await server.http(.PUT, "/s.json", body: #"{"kept":true}"#)
            let silentPut = try await server.http(.PUT, "/s/new.json?print=silent", body: "5")
            #expect(silentPut.status == 204)
            #expect(try await server.http(.GET, "/s/new.json").body == "5")
        }
    }

    @Test func printPrettyIndents() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/p.json", body: #"{"a":{"b":1},"c":[1,2]}"#)
            let pretty = try await server.http(.GET, "/p.json?print=pretty")
            #expect(pretty.status == 200)
            #expect(pretty.body.contains("\n  "))
            #expect(pretty.json == ["a": ["b": 1], "c": [1, 2]])
            let compact = try await server.http(.GET, "/p.json")
            #expect(!compact.body.contains("\n"))
        }
    }

    @Test func shallowReplacesChildrenWithTrue() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/sh.json", body: #"{"a":{"deep":{"x":1}},"b":"leaf","c":3}"#)
            #expect(try await server.http(.GET, "/sh.json?shallow=true").json == ["a": true, "b": true, "c": true])
            #expect(try await server.http(.GET, "/sh/b.json?shallow=true").json == "leaf")
            #expect(try await server.http(.GET, "/nothing.json?shallow=true").json == .null)
        }
    }

    @Test func formatExportIncludesPriorities() async throws {
        try await withTestServer { server in
            let written = #"{"a":{".value":1,".priority":2},"b":{"c":true,".priority":"p"}}"#
            _ = try await server.http(.PUT, "/e.json", body: written)
            #expect(
                try await server.http(.GET, "/e.json?format=export").json
                    == ["a": [".value": 1, ".priority": 2], "b": ["c": true, ".priority": "p"]])
            #expect(try await server.http(.GET, "/e.json").json == ["a": 1, "b": ["c": true]])
            _ = try await server.http(.PUT, "/e/a/.priority.json", body: "7")
            #expect(try await server.http(.GET, "/e/a.json?format=export").json == [".value": 1, ".priority": 7])
        }
    }

    @Test func serverValuesResolveOverREST() async throws {
        try await withTestServer { server in
            let before = nowMilliseconds()
            let put = try await server.http(
                .PUT, "/sv.json", body: #"{"t":{".sv":"timestamp"},"n":{".sv":{"increment":2}}}"#)
            #expect(put.status == 200)
            let value = try await server.http(.GET, "/sv.json").json
            #expect((value?["t"]?.numberValue ?? 0) >= before - 1000)
            #expect(value?["n"] == 2)
            _ = try await server.http(.PATCH, "/sv.json", body: #"{"n":{".sv":{"increment":3}}}"#)
            #expect(try await server.http(.GET, "/sv/n.json").json == 5)
        }
    }

    @Test(arguments: ["{not json", "", #"{"a":}"#, "[1,"])
    func unparsableBodyIsRefusedWithTheExactMessage(body: String) async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/keep.json", body: "1")
            for method: TestHTTPMethod in [.PUT, .PATCH, .POST] {
                let response = try await server.http(method, "/keep.json", body: body)
                #expect(response.status == 400, "\(method)")
                #expect(response.body == Self.invalidData, "\(method)")
            }
            #expect(try await server.http(.GET, "/keep.json").body == "1")
        }
    }

    @Test func invalidDataOrPathIsRefusedWith400AndChangesNothing() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/keep.json", body: "1")
            let badKey = try await server.http(.PUT, "/keep.json", body: #"{"a.b":1}"#)
            #expect(badKey.status == 400)
            #expect(badKey.json?["error"]?.stringValue?.isEmpty == false)
            let badPath = try await server.http(.PUT, "/a$b.json", body: "1")
            #expect(badPath.status == 400)
            let deepPath = "/" + (0..<33).map { "k\($0)" }.joined(separator: "/") + ".json"
            #expect(try await server.http(.PUT, deepPath, body: "1").status == 400)
            #expect(try await server.http(.GET, "/keep.json").body == "1")
            #expect(try await server.http(.GET, "/.json").json == ["keep": 1])
        }
    }

    @Test func unsupportedMethodIs405() async throws {
        try await withTestServer { server in
            let response = try await server.http(.TRACE, "/x.json")
            #expect(response.status == 405)
            #expect(response.json?["error"] != nil)
        }
    }

    @Test func aPathNotEndingInJSONIsNotFound() async throws {
        try await withTestServer { server in
            let response = try await server.http(.GET, "/users")
            #expect(response.status == 404)
            #expect(response.json?["error"] != nil)
        }
    }

    @Test func tooLargeBodyIs413() async throws {
        try await withTestServer(configure: { $0.maxMessageBytes = 2048 }) { server in
            let response = try await server.http(
                .PUT, "/big.json", body: "\"" + String(repeating: "x", count: 5000) + "\"")
            #expect(response.status == 413)
            #expect(try await server.http(.GET, "/big.json").body == "null")
        }
    }

    @Test func rulesDocumentCanBeReadAndReplacedByTheOwnerOnly() async throws {
        try await withTestServer { server in
            let owner = [("Authorization", "Bearer owner")]
            #expect(try await server.http(.GET, "/.settings/rules.json").status == 401)
            let initial = try await server.http(.GET, "/.settings/rules.json", headers: owner)
            #expect(initial.status == 200)
            #expect(initial.json?["rules"]?.objectValue != nil)

            let rules = #"{"rules":{".read":true,".write":false,"scores":{".indexOn":["s"]}}}"#
            let denied = try await server.http(.PUT, "/.settings/rules.json", body: rules)
            #expect(denied.status == 401)
            #expect(denied.body == #"{"error":"Permission denied"}"#)
            let wrongToken = try await server.http(
                .PUT, "/.settings/rules.json", headers: [("Authorization", "Bearer someone")], body: rules)
            #expect(wrongToken.status == 401)
            #expect(try await server.http(.GET, "/.settings/rules.json", headers: owner).json == initial.json)

            let accepted = try await server.http(
                .PUT, "/.settings/rules.json", headers: [("Authorization", "Bearer owner")], body: rules)
            #expect(accepted.status == 200)
            #expect(
                try await server.http(.GET, "/.settings/rules.json", headers: owner).json
                    == (try JSONValue(parsing: rules)))

            let malformed = try await server.http(
                .PUT, "/.settings/rules.json", headers: [("Authorization", "Bearer owner")], body: "{nope")
            #expect(malformed.status == 400)
        }
    }

    @Test func healthAndMetrics() async throws {
        try await withTestServer { server in
            let health = try await server.http(.GET, "/health")
            #expect(health.status == 200)
            #expect(health.body.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")

            _ = try await server.http(.PUT, "/m.json", body: "1")
            let metrics = try await server.http(.GET, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
            for name in ["canopy_writes_total", "canopy_rest_requests_total", "canopy_connections_open"] {
                #expect(metrics.body.contains(name), "missing \(name)")
            }
            // The one write above was committed in a transaction of its own.
            let lines = Set(metrics.body.split(separator: "\n").map(String.init))
            #expect(lines.contains("canopy_commit_batch_writes_count 1"), "\(metrics.body)")
            #expect(
                lines.contains {
                    $0 == "canopy_commit_batch_writes_sum 1" || $0 == "canopy_commit_batch_writes_sum 1.0"
                })
        }
    }
}
