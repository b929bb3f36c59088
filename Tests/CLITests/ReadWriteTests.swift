import CanopyServer
import CanopyTesting
import Foundation
import Testing
import Tree

/// `canopy get | set | update | push | remove | rules` run as a separate process against a real server.
@Suite(.timeLimit(.minutes(3)))
struct ReadWriteTests {
    @Test func setGetUpdatePushAndRemove() async throws {
        try await withTestServer { server in
            let set = try await server.canopy("set", "users/ada", #"{"name": "Ada", "score": 36}"#)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stdout.isEmpty)

            let get = try await server.canopy("get", "users/ada")
            #expect(get.status == 0)
            #expect(get.stdout == #"{"name":"Ada","score":36}"# + "\n", "compact JSON when piped")

            let update = try await server.canopy("update", "users", #"{"ada/score": 37, "alan": {"score": 41}}"#)
            #expect(update.status == 0, "\(update.stderr)")
            let users = try await server.canopy("get", "users")
            #expect(
                try JSONValue(parsing: users.stdout) == ["ada": ["name": "Ada", "score": 37], "alan": ["score": 41]])

            let push = try await server.canopy("push", "messages", #"{"text": "hello"}"#)
            #expect(push.status == 0, "\(push.stderr)")
            let name = try #require(try JSONValue(parsing: push.stdout)["name"]?.stringValue)
            #expect(name.count == 20, "a push id: \(name)")
            let message = try await server.http(.GET, "/messages/\(name).json?ns=test")
            #expect(message.json == ["text": "hello"])

            let remove = try await server.canopy("remove", "users/ada")
            #expect(remove.status == 0, "\(remove.stderr)")
            let gone = try await server.canopy("get", "users/ada")
            #expect(gone.stdout == "null\n")
        }
    }

    @Test func valuesComeFromFilesAndStdin() async throws {
        try await withTestServer { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-value-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(#"{"from": "file", "list": [1, 2, 3]}"#.utf8).write(to: file)
            let fromFile = try await server.canopy("set", "a", "@" + file.path)
            #expect(fromFile.status == 0, "\(fromFile.stderr)")
            let fromStdin = try await server.canopy("set", "b", "-", input: Data(#""from stdin""#.utf8))
            #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
            let both = try await server.canopy("get", "/")
            #expect(
                try JSONValue(parsing: both.stdout) == ["a": ["from": "file", "list": [1, 2, 3]], "b": "from stdin"])
        }
    }

    @Test func queryFlagsSelectChildren() async throws {
        try await withTestServer { server in
            let scores =
                #"{"ada": {"score": 36, "name": "Ada"}, "alan": {"score": 41, "name": "Alan"}, "#
                + #""grace": {"score": 12, "name": "Grace"}, "linus": {"score": 28, "name": "Linus"}}"#
            #expect(try await server.canopy("set", "users", scores).status == 0)

            func keys(_ arguments: String...) async throws -> [String] {
                let get = try await CLIProcess.run(["get", "users"] + arguments, environment: server.cliEnvironment)
                #expect(get.status == 0, "\(arguments): \(get.stderr)")
                return try JSONValue(parsing: get.stdout).objectValue?.keys.sorted() ?? []
            }
            #expect(try await keys("--order-by-child", "score", "--limit-to-last", "2") == ["ada", "alan"])
            #expect(
                try await keys("--order-by-child", "score", "--start-at", "20", "--end-at", "40") == ["ada", "linus"])
            #expect(try await keys("--order-by-child", "score", "--start-after", "28", "--end-before", "41") == ["ada"])
            #expect(try await keys("--order-by-child", "name", "--equal-to", #""Grace""#) == ["grace"])
            #expect(
                try await keys("--order-by-key", "--start-after", #""alan""#, "--limit-to-first", "2") == [
                    "grace", "linus",
                ])
            #expect(try await keys("--order-by-key", "--end-at", #""alan""#) == ["ada", "alan"])
            #expect(try await keys("--order-by-priority", "--limit-to-first", "1") == ["ada"])

            let values = #"{"a": 3, "b": 1, "c": 2}"#
            #expect(try await server.canopy("set", "numbers", values).status == 0)
            let lowest = try await server.canopy("get", "numbers", "--order-by-value", "--limit-to-first", "2")
            #expect(try JSONValue(parsing: lowest.stdout) == ["b": 1, "c": 2])

            let shallow = try await server.canopy("get", "users", "--shallow")
            #expect(
                try JSONValue(parsing: shallow.stdout) == ["ada": true, "alan": true, "grace": true, "linus": true])
        }
    }

    @Test func rulesGetAndSet() async throws {
        try await withTestServer { server in
            let anonymous = try await server.canopy("rules", "get")
            #expect(anonymous.status == 77, "the rules are the admin's: \(anonymous.stderr)")
            let initial = try await server.canopy("rules", "get", "--token", "owner")
            #expect(initial.status == 0, "\(initial.stderr)")
            #expect(try JSONValue(parsing: initial.stdout)["rules"] != nil)

            let document = #"{"rules": {".read": true, ".write": true, "users": {".indexOn": "score"}}}"#
            let refused = try await server.canopy("rules", "set", document)
            #expect(refused.status == 77, "rules need the admin token: \(refused.stderr)")
            #expect(refused.stderr.contains("permission denied"))

            let accepted = try await server.canopy("rules", "set", document, "--token", "owner")
            #expect(accepted.status == 0, "\(accepted.stderr)")
            // One line says what was set where (the test environment's URL names namespace test).
            #expect(
                accepted.stdout == "Rules set for namespace test at \(server.baseURL) (\(document.utf8.count) B).\n",
                "\(accepted.stdout)")
            let asJSON = try await server.canopy("rules", "set", document, "--token", "owner", "--json")
            #expect(
                try JSONValue(parsing: asJSON.stdout)
                    == [
                        "rules": "set", "server": .string(server.baseURL), "namespace": "test",
                        "bytes": .number(Double(document.utf8.count)),
                    ], "\(asJSON.stdout)")
            let fromEnvironment = try await server.canopy(
                "rules", "set", document, environment: ["CANOPY_TOKEN": "owner"])
            #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
            let read = try await server.canopy("rules", "get", "--token", "owner")
            #expect(try JSONValue(parsing: read.stdout) == (try JSONValue(parsing: document)))

            let notRules = try await server.canopy("rules", "set", #"{"read": true}"#, "--token", "owner")
            #expect(notRules.status == 65)
            // Comments pass through to the server; a mistake is reported with its line and column.
            let commented = "{\n  // everyone reads\n  \"rules\": {\".read\": true}\n}"
            #expect(try await server.canopy("rules", "set", commented, "--token", "owner").status == 0)
            let wrong = "{\n  \"rules\": {\n    \".read\": \"auth.uid ==\"\n  }\n}"
            let refusedWrong = try await server.canopy("rules", "set", wrong, "--token", "owner")
            #expect(refusedWrong.status == 65 && refusedWrong.stderr.contains("Line 3"), "\(refusedWrong.stderr)")
        }
    }

    @Test func serverTimeIsTheServersClock() async throws {
        try await withTestServer { server in
            let before = Date().timeIntervalSince1970 * 1000
            let result = try await server.canopy("server-time")
            let after = Date().timeIntervalSince1970 * 1000
            #expect(result.status == 0, "\(result.stderr)")
            let time = try #require(Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            // The server runs in this process, on this clock: its time lies within the command's run.
            #expect(time >= before - 1000 && time <= after + 1000, "\(time) not in \(before)...\(after)")
        }
    }

    @Test func helpHasExamplesAndCompletionsAreGenerated() async throws {
        for command in ["get", "set", "update", "push", "remove", "listen", "import", "export", "server-time", "rules"]
        {
            let help = try await CLIProcess.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Examples:"), "\(command) --help has no examples")
        }
        let root = try await CLIProcess.run(["--help"])
        #expect(root.stdout.contains("Exit codes:"))
        for shell in ["bash", "zsh", "fish"] {
            let script = try await CLIProcess.run(["--generate-completion-script", shell])
            #expect(script.status == 0)
            #expect(script.stdout.contains("import"), "\(shell) completions")
        }
    }
}
