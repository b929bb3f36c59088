import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

/// `canopy import` and `canopy export` on documents small enough to check against the server's own
/// handling of the same JSON (a plain PUT and GET).
@Suite(.timeLimit(.minutes(3)))
struct ImportExportTests {
    /// A document with every kind of value: nested objects, dense and sparse arrays, arrays of
    /// arrays, nulls, empty containers, escapes and non-ASCII text, integers and fractions.
    static func document(seed: UInt64, children: Int) -> JSONValue {
        var random = SeededGenerator(seed: seed)
        func value(depth: Int) -> JSONValue {
            switch Int.random(in: 0..<12, using: &random) {
            case 0 where depth < 5, 1 where depth < 5, 2 where depth < 5:
                var members: [String: JSONValue] = [:]
                for index in 0..<Int.random(in: 1...8, using: &random) {
                    members["k\(index)-\(Int.random(in: 0..<100, using: &random))"] = value(depth: depth + 1)
                }
                return .object(members)
            case 3 where depth < 5:
                return .array((0..<Int.random(in: 1...6, using: &random)).map { _ in value(depth: depth + 1) })
            case 4: return .array([1, .null, .null, .null, 5])  // sparse: stored as an object
            case 5: return .array([])  // empty: stored as nothing
            case 6: return .string("line\nquote\" backslash\\ tab\t é 日本 \u{1}")
            case 7: return .number(Double(Int.random(in: -1_000_000...1_000_000, using: &random)))
            case 8: return .number(Double(Int.random(in: 0..<1000, using: &random)) / 8 + 1e-7)
            case 9: return .bool(Bool.random(using: &random))
            case 10: return .null
            default: return .string(String(repeating: "abc", count: Int.random(in: 0..<200, using: &random)))
            }
        }
        var members: [String: JSONValue] = [:]
        for index in 0..<children { members["c\(index)"] = value(depth: 0) }
        members["array"] = .array((0..<30).map { .object(["i": .number(Double($0)), "v": value(depth: 3)]) })
        return .object(members)
    }

    static func temporaryFile(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-import-\(UUID()).json")
        try Data(text.utf8).write(to: file)
        return file
    }

    /// In 1 KB pieces, a document of 40 children (74 KB, 120 writes): on a starved CI machine the
    /// 120 children of the whole-file case (214 KB, some 350 writes) once took the CLI over its two
    /// minutes.
    @Test(arguments: [(1024, 40), (4 * 1024 * 1024, 120)])
    func importReadsBackAsTheServerStoresTheSameJSON(chunkSize: Int, children: Int) async throws {
        let text = Self.document(seed: 7, children: children).serialized(pretty: true)
        let file = try Self.temporaryFile(text)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/cli.json?ns=test", body: #"{"old": "data"}"#)
            let imported = try await server.canopy("import", "cli", file.path, "--chunk-size", "\(chunkSize)")
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(imported.stderr.isEmpty, "no progress when stderr is not a terminal")
            let put = try await server.http(.PUT, "/rest.json?ns=test&print=silent", body: text)
            #expect(put.status == 204)
            let viaCLI = try await server.http(.GET, "/cli.json?ns=test")
            let viaREST = try await server.http(.GET, "/rest.json?ns=test")
            #expect(viaCLI.body == viaREST.body, "the import replaced /cli with what a PUT of the file stores")

            let exported = try await server.canopy("export", "cli")
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(exported.stdout == viaREST.body + "\n", "export prints what a GET answers")
            let small = try await CLIProcess.run(
                ["export", "cli", "--piece-size", "65536"], environment: server.cliEnvironment)
            #expect(small.stdout == viaREST.body + "\n", "also in small pieces")
        }
    }

    @Test func arraysLeavesAndNothingRoundTrip() async throws {
        try await withTestServer { server in
            for (path, text) in [
                ("array", "[[1, 2], [3, [4, 5]], {\"a\": [true, false]}, \"x\"]"),
                ("sparse", "[1, null, null, null, 5]"),
                ("leaf", #""just a string""#), ("number", "-12.5e3"), ("empty", "{}"),
            ] {
                let file = try Self.temporaryFile(text)
                defer { try? FileManager.default.removeItem(at: file) }
                let imported = try await server.canopy("import", path, file.path, "--chunk-size", "1024")
                #expect(imported.status == 0, "\(path): \(imported.stderr)")
                _ = try await server.http(.PUT, "/expected/\(path).json?ns=test&print=silent", body: text)
                let expected = try await server.http(.GET, "/expected/\(path).json?ns=test")
                let exported = try await server.canopy("export", path)
                #expect(exported.stdout == expected.body + "\n", "\(path)")
            }
            let fromStdin = try await server.canopy("import", "stdin", "-", input: Data(#"{"a": [1, 2]}"#.utf8))
            #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
            #expect(try await server.http(.GET, "/stdin.json?ns=test").body == #"{"a":[1,2]}"#)
        }
    }

    /// A Firebase export's shape: one node with thousands of small children, written in many
    /// updates of that node, read back and exported byte for byte (the document is written as the
    /// server writes JSON).
    @Test func aWideNodeRoundTripsThroughManyUpdates() async throws {
        for text in [ImportChunkerTests.wideNode(children: 3000), ImportChunkerTests.nestedWideNode(children: 3000)] {
            let file = try Self.temporaryFile(text)
            defer { try? FileManager.default.removeItem(at: file) }
            try await withTestServer { server in
                let imported = try await server.canopy("import", "wide", file.path, "--chunk-size", "65536")
                #expect(imported.status == 0, "\(imported.stderr)")
                let stored = try await server.http(.GET, "/wide.json?ns=test")
                #expect(stored.body == text, "\(stored.body.prefix(200))")
                let exported = try await server.canopy("export", "wide")
                #expect(exported.status == 0, "\(exported.stderr)")
                #expect(exported.stdout == text + "\n", "\(exported.stdout.prefix(200))")
            }
        }
    }

    @Test func mergeReplacesTheFilesChildrenAndKeepsTheOthers() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/m.json?ns=test", body: #"{"a": 1, "b": {"x": 1, "y": 2}, "c": 3}"#)
            let big = (0..<200).map { #""z\#($0)": "\#(String(repeating: "v", count: 50))""# }.joined(separator: ",")
            let file = try Self.temporaryFile(#"{"b": {\#(big)}, "d": 4}"#)
            defer { try? FileManager.default.removeItem(at: file) }
            let merged = try await server.canopy("import", "m", file.path, "--merge", "--chunk-size", "1024")
            #expect(merged.status == 0, "\(merged.stderr)")
            let result = try #require(try await server.http(.GET, "/m.json?ns=test").json?.objectValue)
            #expect(result["a"] == 1 && result["c"] == 3 && result["d"] == 4, "other children are kept")
            #expect(result["b"]?.objectValue?.count == 200, "b is replaced, not merged: \(result["b"] ?? .null)")

            let scalar = try Self.temporaryFile("42")
            defer { try? FileManager.default.removeItem(at: scalar) }
            let refused = try await server.canopy("import", "m", scalar.path, "--merge")
            #expect(refused.status == 65, "\(refused.stderr)")
        }
    }

    @Test func invalidDocumentsAreRefusedBeforeAnythingIsWritten() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/target.json?ns=test", body: #"{"keep": "me"}"#)
            let filler = (0..<2000).map { #""f\#($0)": \#($0)"# }.joined(separator: ",\n")
            let cases: [(text: String, message: String)] = [
                (#"{\#(filler), "users": {"ada": {"a.b": 1}}}"#, #"invalid key "a.b" at /users/ada: it contains '.'"#),
                (#"{\#(filler), "x": {"$key": 1}}"#, #"invalid key "$key" at /x"#),
                (#"{\#(filler), "x": {"": 1}}"#, #"invalid key "" at /x: it is empty"#),
                (#"{\#(filler), "x": [1, 2,]}"#, "invalid JSON: unexpected ']', expected a value at line 2000"),
                (#"{\#(filler), "x": 1e999}"#, "out of range"),
                (#"{\#(filler), "x": "\#u{1}"}"#, "control character"),
                (String(repeating: #"{"a":"#, count: 40) + "1" + String(repeating: "}", count: 40), "levels deep"),
            ]
            for (text, message) in cases {
                let file = try Self.temporaryFile(text)
                defer { try? FileManager.default.removeItem(at: file) }
                let result = try await server.canopy("import", "target", file.path, "--chunk-size", "1024")
                #expect(result.status == 65, "\(message): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(result.stderr)")
                #expect(result.stderr.contains("nothing was written"), "\(result.stderr)")
            }
            #expect(try await server.http(.GET, "/target.json?ns=test").body == #"{"keep":"me"}"#)
        }
    }
}
