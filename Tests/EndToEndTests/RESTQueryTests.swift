import CanopyTesting
import Testing
import Tree

/// REST queries: `orderBy` with ranges and limits, JSON-encoded query-string values.
struct RESTQueryTests {
    static let dinosaurs = #"""
        {"bruhathkayosaurus":{"height":25,"length":44},
         "lambeosaurus":{"height":2.1,"length":12.5},
         "linhenykus":{"height":0.6,"length":1},
         "pterodactyl":{"height":0.6,"length":1.2},
         "stegosaurus":{"height":4,"length":9},
         "triceratops":{"height":3,"length":9}}
        """#

    /// Writes the dinosaurs and returns the keys a query selects.
    static func keys(_ server: TestServer, _ query: KeyValuePairs<String, String>) async throws -> [String] {
        let response = try await server.http(.GET, "/dinosaurs.json" + TestServer.query(query))
        #expect(response.status == 200, "\(query): \(response.body)")
        return (response.json?.objectValue?.keys).map { $0.sorted() } ?? []
    }

    static func withDinosaurs(_ body: (TestServer) async throws -> Void) async throws {
        try await withTestServer { server in
            let put = try await server.http(.PUT, "/dinosaurs.json", body: dinosaurs)
            #expect(put.status == 200)
            try await body(server)
        }
    }

    @Test func orderByKey() async throws {
        try await Self.withDinosaurs { server async throws in
            #expect(
                try await Self.keys(server, ["orderBy": "\"$key\"", "limitToFirst": "2"])
                    == ["bruhathkayosaurus", "lambeosaurus"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"$key\"", "startAt": "\"l\"", "endAt": "\"p\""])
                    == ["lambeosaurus", "linhenykus"])
            #expect(
                try await Self.keys(
                    server, ["orderBy": "\"$key\"", "startAfter": "\"lambeosaurus\"", "limitToFirst": "1"])
                    == ["linhenykus"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"$key\"", "endBefore": "\"lambeosaurus\""])
                    == ["bruhathkayosaurus"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"$key\"", "equalTo": "\"stegosaurus\""]) == ["stegosaurus"])
        }
    }

    @Test func orderByChild() async throws {
        try await Self.withDinosaurs { server async throws in
            #expect(
                try await Self.keys(server, ["orderBy": "\"height\"", "startAt": "3"])
                    == ["bruhathkayosaurus", "stegosaurus", "triceratops"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"height\"", "endAt": "2.1"])
                    == ["lambeosaurus", "linhenykus", "pterodactyl"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"height\"", "equalTo": "0.6"]) == [
                    "linhenykus", "pterodactyl",
                ])
            #expect(
                try await Self.keys(server, ["orderBy": "\"height\"", "startAfter": "3", "endBefore": "25"])
                    == ["stegosaurus"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"length\"", "limitToLast": "2"])
                    == ["bruhathkayosaurus", "lambeosaurus"])
            #expect(
                try await Self.keys(server, ["orderBy": "\"height\"", "startAt": "3", "limitToFirst": "1"])
                    == ["triceratops"])
        }
    }

    @Test func orderByValueAndPriority() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/scores.json", body: #"{"ada":30,"bob":10,"cy":20,"dee":"text"}"#)
            let byValue = try await server.http(
                .GET, "/scores.json" + TestServer.query(["orderBy": "\"$value\"", "limitToLast": "2"]))
            #expect(byValue.json == ["ada": 30, "dee": "text"])
            let range = try await server.http(
                .GET, "/scores.json" + TestServer.query(["orderBy": "\"$value\"", "startAt": "15", "endAt": "30"]))
            #expect(range.json == ["ada": 30, "cy": 20])

            _ = try await server.http(
                .PUT, "/ranked.json",
                body: #"{"x":{".value":1,".priority":3},"y":{".value":2,".priority":1},"z":{".value":3,".priority":2}}"#
            )
            let byPriority = try await server.http(
                .GET, "/ranked.json" + TestServer.query(["orderBy": "\"$priority\"", "limitToFirst": "2"]))
            #expect(byPriority.json == ["y": 2, "z": 3])
            let priorityRange = try await server.http(
                .GET, "/ranked.json" + TestServer.query(["orderBy": "\"$priority\"", "startAt": "2"]))
            #expect(priorityRange.json == ["x": 1, "z": 3])
        }
    }

    @Test func aPlusInAQueryValueIsNotASpace() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/k.json", body: #"{"a+b":1,"a b":2,"c":3}"#)
            let raw = try await server.http(.GET, "/k.json?orderBy=%22$key%22&equalTo=%22a+b%22")
            #expect(raw.json == ["a+b": 1])
            let encoded = try await server.http(.GET, "/k.json?orderBy=%22$key%22&equalTo=%22a%2Bb%22")
            #expect(encoded.json == ["a+b": 1])
            let space = try await server.http(.GET, "/k.json?orderBy=%22$key%22&equalTo=%22a%20b%22")
            #expect(space.json == ["a b": 2])
        }
    }

    @Test func queryAnswersAreObjectsEvenForArrayLikeData() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/list.json", body: #"["a","b","c"]"#)
            #expect(try await server.http(.GET, "/list.json").json == ["a", "b", "c"])
            let first = try await server.http(
                .GET, "/list.json" + TestServer.query(["orderBy": "\"$key\"", "limitToFirst": "2"]))
            #expect(first.json == ["0": "a", "1": "b"])
        }
    }

    @Test(arguments: [
        "limitToFirst=1", "startAt=1", "endAt=2", "equalTo=3", "limitToLast=1", "startAfter=1", "endBefore=1",
    ])
    func rangeOrLimitWithoutOrderByIsRefused(parameter: String) async throws {
        try await Self.withDinosaurs { server async throws in
            let response = try await server.http(.GET, "/dinosaurs.json?\(parameter)")
            #expect(response.status == 400)
            #expect(response.body == #"{"error":"orderBy must be defined when other query parameters are defined"}"#)
        }
    }

    @Test func malformedQueryValuesAreRefused() async throws {
        try await Self.withDinosaurs { server async throws in
            let unquoted = try await server.http(.GET, "/dinosaurs.json?orderBy=height")
            #expect(unquoted.status == 400)
            let badLimit = try await server.http(.GET, "/dinosaurs.json?orderBy=%22$key%22&limitToFirst=abc")
            #expect(badLimit.status == 400)
            let zeroLimit = try await server.http(.GET, "/dinosaurs.json?orderBy=%22$key%22&limitToFirst=0")
            #expect(zeroLimit.status == 400)
            let numericKeyBound = try await server.http(.GET, "/dinosaurs.json?orderBy=%22$key%22&startAt=1")
            #expect(numericKeyBound.status == 400)
            let bothLimits = try await server.http(
                .GET, "/dinosaurs.json?orderBy=%22$key%22&limitToFirst=1&limitToLast=1")
            #expect(bothLimits.status == 400)
            for response in [unquoted, badLimit, zeroLimit, numericKeyBound, bothLimits] {
                #expect(response.json?["error"]?.stringValue?.isEmpty == false, "\(response.body)")
            }
        }
    }
}
