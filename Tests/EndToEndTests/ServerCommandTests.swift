import CanopyServer
import CanopyTesting
import Foundation
import ProcessResources
import Testing
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy-server` as a new user meets it: problems at start are one clear line and a non-zero exit.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct ServerCommandTests {
    @Test func versionPrintsTheServerVersion() async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(executable: executable, arguments: ["--version"])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == CanopyServer.version)
    }

    @Test func aDataPathThatIsAFileStopsTheServerAtStart() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/not-a-folder"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))

        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--data", file])
        #expect(status != 0)
        #expect(
            output.contains("canopy-server: cannot use data folder \(file): it is a file, not a folder"),
            "output:\n\(output)")
        #expect(!output.contains("listening"))
    }

    @Test(.enabled(if: getuid() != 0, "root can write into any folder"))
    func anUnwritableDataFolderStopsTheServerAtStart() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer {
            chmod(folder, 0o700)
            try? FileManager.default.removeItem(atPath: folder)
        }
        chmod(folder, 0o500)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--data", folder])
        #expect(status != 0)
        #expect(output.contains("cannot use data folder \(folder): cannot create files in it"), "output:\n\(output)")
    }

    @Test func aMissingDataFolderIsCreated() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let data = folder + "/new/data"
        let server = try await ServerProcess.start(executable: executable, dataDirectory: data)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: data, isDirectory: &isDirectory) && isDirectory.boolValue)
        let write = try await TestServer.http(baseURL: server.baseURL, .PUT, "/a.json", body: "1")
        #expect(write.status == 200)
        await server.terminate()
    }

    /// Two servers on one data folder would each hold its namespaces in memory and answer with what
    /// it alone wrote (a write through one never reached the other's readers): the second is
    /// refused at start, naming the process that holds the folder. The lock goes with its process,
    /// even one killed by a signal.
    @Test func aSecondServerOnTheSameDataFolderIsRefused() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        #expect(try await TestServer.http(baseURL: first.baseURL, .PUT, "/a.json", body: "\"first\"").status == 200)

        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--data", folder])
        #expect(status != 0)
        #expect(
            output.contains(
                "canopy-server: cannot use data folder \(folder): another canopy-server (process \(first.pid)) is "
                    + "using it; stop that server, or give this one another --data (CANOPY_DATA)"),
            "output:\n\(output)")

        await first.kill()
        let next = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        let read = try await TestServer.http(baseURL: next.baseURL, .GET, "/a.json")
        #expect(read.body == "\"first\"")
        await next.terminate()
        #expect(next.exitStatus == 0)
    }

    @Test func anAddressInUseIsNamedWithItsPort() async throws {
        let executable = try #require(serverExecutable)
        try await withTestServer { taken in
            let (status, output) = try await ServerProcess.run(
                executable: executable, arguments: ["--port", String(taken.port), "--in-memory"])
            #expect(status != 0)
            #expect(
                output.contains("cannot listen on 127.0.0.1:\(taken.port): address already in use"),
                "output:\n\(output)")
        }
    }

    /// `CANOPY_IN_MEMORY` is honoured (the data path, a file, is never looked at), and SIGTERM
    /// logs the start and the end of the shutdown.
    @Test func inMemoryFromTheEnvironmentAndShutdownIsLogged() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/not-a-folder"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))

        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: file, environment: ["CANOPY_IN_MEMORY": "true"])
        #expect(try await TestServer.http(baseURL: server.baseURL, .PUT, "/a.json", body: "1").status == 200)
        await server.terminate()
        #expect(server.exitStatus == 0)
        #expect(server.log.contains("graceful shutdown started"), "log:\n\(server.log)")
        #expect(server.log.contains("canopy-server stopped"), "log:\n\(server.log)")
    }

    @Test func aBooleanVariableThatIsNotABooleanIsRefused() async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--in-memory"], environment: ["CANOPY_FSYNC": "maybe"])
        #expect(status != 0)
        #expect(output.contains("CANOPY_FSYNC must be true or false"), "output:\n\(output)")
    }

    @Test func aTrustedProxyThatIsNotACIDRIsRefused() async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(
            executable: executable,
            arguments: ["--port", "0", "--in-memory", "--trusted-proxies", "10.0.0.0/8,fd00::/200"])
        #expect(status != 0)
        #expect(output.contains(#"--trusted-proxies: "fd00::/200" is not a CIDR"#), "output:\n\(output)")
        let (variableStatus, variableOutput) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--in-memory"],
            environment: ["CANOPY_TRUSTED_PROXIES": "nginx.local"])
        #expect(variableStatus != 0)
        #expect(variableOutput.contains(#"CANOPY_TRUSTED_PROXIES: "nginx.local" is not a CIDR"#), "\(variableOutput)")
    }

    // MARK: Start-up problems: one line each, saying what and where

    /// Every numeric `CANOPY_…` variable that does not hold a number it takes is refused with what it
    /// must be, instead of being replaced by its default.
    @Test func aNumericVariableThatIsNotANumberItTakesIsRefused() async throws {
        let executable = try #require(serverExecutable)
        let seconds = "a number of seconds, more than 0 and at most 1000000000"
        let variables: [(name: String, value: String, expected: String)] = [
            ("CANOPY_PORT", "abc", "an integer from 0 to 65535"),
            ("CANOPY_PORT", "70000", "an integer from 0 to 65535"),
            ("CANOPY_MAX_MESSAGE_BYTES", "16MB", "an integer of at least 1024"),
            ("CANOPY_MAX_PENDING_OUTBOUND_BYTES", "x", "an integer of at least 65536"),
            ("CANOPY_MAX_PENDING_REQUEST_BYTES", "x", "an integer of at least 65536"),
            ("CANOPY_MAX_TOTAL_PENDING_OUTBOUND_BYTES", "x", "an integer of at least 65536"),
            ("CANOPY_MAX_UNCOMMITTED_WRITES", "1.5", "an integer of at least 1"),
            ("CANOPY_MAX_QUERY_INDEXES_PER_NODE", "x", "an integer of at least 1"),
            ("CANOPY_MAX_LISTENS_PER_CONNECTION", "0", "an integer of at least 1"),
            ("CANOPY_MAX_ON_DISCONNECT_BYTES", "x", "an integer of at least 1024"),
            ("CANOPY_MAX_OPEN_NAMESPACES", "", "an integer of at least 1"),
            ("CANOPY_AUTH_MAX_TOKEN_BYTES", "x", "an integer of at least 256"),
            ("CANOPY_LEASE_DURATION", "5s", "a number of seconds, at least 1 and at most 1000000000"),
            ("CANOPY_HEARTBEAT_INTERVAL", "inf", seconds),
            ("CANOPY_SSE_KEEPALIVE_INTERVAL", "x", seconds),
            ("CANOPY_NAMESPACE_IDLE_TIMEOUT", "-1", seconds),
            ("CANOPY_QUERY_INDEX_IDLE_TIMEOUT", "x", seconds),
            ("CANOPY_SHUTDOWN_TIMEOUT", "nan", seconds),
            ("CANOPY_AUTH_CLOCK_SKEW", "x", "a number of seconds, at least 0 and at most 1000000000"),
        ]
        for variable in variables {
            // The option given on the command line does not hide a mistake in the environment.
            let (status, output) = try await ServerProcess.run(
                executable: executable, arguments: ["--port", "0", "--in-memory"],
                environment: [variable.name: variable.value])
            let expected = "Error: \(variable.name) must be \(variable.expected), not \"\(variable.value)\""
            #expect(status == 64, "\(variable.name)=\(variable.value)")
            #expect(Self.lines(output).first == expected, "\(variable.name)=\(variable.value): \(output)")
        }
    }

    /// Options and variables with a value the server cannot use: `ExitCode.validationFailure` (64),
    /// and the first line says which, what it is and what it must be.
    @Test(
        arguments: [
            (
                ["--log-level", "verbose"], [:],
                #"--log-level must be one of trace, debug, info, notice, warning, error, critical, not "verbose""#
            ),
            (
                [], ["CANOPY_LOG_LEVEL": "verbose"],
                #"CANOPY_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical, not "verbose""#
            ),
            (["--port", "70000"], [:], "--port must be an integer from 0 to 65535, not 70000"),
            (
                ["--heartbeat-interval", "inf"], [:],
                "--heartbeat-interval must be a number of seconds, more than 0 and at most 1000000000, not inf"
            ),
            (
                [], ["CANOPY_REST_FORWARDING": "always"],
                #"CANOPY_REST_FORWARDING must be auto, redirect or proxy, not "always""#
            ),
        ] as [([String], [String: String], String)])
    func anUnusableOptionIsRefusedWithWhatItMustBe(
        arguments: [String], environment: [String: String], message: String
    ) async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--in-memory"] + arguments, environment: environment)
        #expect(status == 64)
        #expect(Self.lines(output).first == "Error: \(message)", "output:\n\(output)")
    }

    /// Problems met while starting: exit status 1 and one line, the last, naming what and where,
    /// without Foundation's or SwiftNIO's error dumps.
    @Test func aStartUpProblemIsOneLine() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let rules = folder + "/rules.json"
        try #"{"rules": {".read": "auth !="}}"#.write(toFile: rules, atomically: true, encoding: .utf8)
        var cases: [(arguments: [String], environment: [String: String], line: String)] = [
            (
                ["--data", file + "/data"], [:],
                "cannot use data folder \(file)/data: it does not exist and cannot be created: Not a directory"
            ),
            (
                // A documentation address (RFC 5737), never one of this machine's: binding fails here.
                ["--in-memory", "--host", "192.0.2.1"], [:],
                "cannot listen on 192.0.2.1:0: no network interface of this machine has that address "
                    + "(choose another --host)"
            ),
            (
                ["--in-memory", "--auth-secret", "short"], [:],
                "cannot set up authentication: --auth-secret (CANOPY_AUTH_SECRET) is 5 bytes long; "
                    + "an HS256 secret needs at least 32"
            ),
            (
                ["--in-memory"], ["CANOPY_AUTH_SECRET": "short"],
                "cannot set up authentication: --auth-secret (CANOPY_AUTH_SECRET) is 5 bytes long; "
                    + "an HS256 secret needs at least 32"
            ),
            (
                ["--in-memory", "--admin-secret", ""], [:],
                "cannot set up authentication: --admin-secret (CANOPY_ADMIN_SECRET) is empty"
            ),
            (
                ["--in-memory", "--rules", rules], [:],
                "cannot use rules file \(rules): invalid rule expression at line 1, column 29: /.read: "
                    + "unexpected end of the expression"
            ),
        ]
        if FileManager.default.fileExists(atPath: "/proc/self") {
            cases.append(
                (
                    ["--data", "/proc/nope"], [:],
                    "cannot use data folder /proc/nope: it does not exist and cannot be created: No such file or directory"
                ))
        }
        for (arguments, environment, line) in cases {
            let (status, output) = try await ServerProcess.run(
                executable: executable, arguments: ["--port", "0"] + arguments, environment: environment)
            #expect(status == 1, "\(arguments)")
            #expect(Self.lines(output).last == "canopy-server: \(line)", "\(arguments): \(output)")
            #expect(Self.lines(output).filter { $0.hasPrefix("canopy-server:") }.count == 1, "\(output)")
            #expect(!output.contains("development server"), "a server that does not start says only why: \(output)")
        }
    }

    /// At `--log-level notice` the server still says where it listens, where its data is, and that
    /// `owner` is its admin.
    @Test func atNoticeLevelTheServerSaysWhereItListens() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder, arguments: ["--log-level", "notice"])
        await server.terminate()
        let listening = Self.lines(server.log).first { $0.contains("canopy-server listening") } ?? ""
        #expect(listening.contains("port=\(server.port)") && listening.contains("data=\(folder)"), "\(server.log)")
        #expect(server.log.contains("'owner' is the admin"), "\(server.log)")
        #expect(server.log.contains("canopy-server stopped"), "\(server.log)")
        #expect(!server.log.contains(" info "), "\(server.log)")
    }

    /// Every connection holds a file descriptor: a server started with a soft open-file limit under
    /// its hard limit raises it to the hard limit, and says the limit it has.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")))
    func theServerRaisesItsOpenFileLimitToTheHardLimit() async throws {
        let executable = try #require(serverExecutable)
        let hard = FileLimit.current.hard
        try #require(hard > 512)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder, launcher: ["/usr/bin/prlimit", "--nofile=512:\(hard)", "--"])
        await server.terminate()
        let line = Self.lines(server.log).first { $0.contains("open-file limit") } ?? ""
        #expect(line.contains("open-file limit \(hard)"), "\(server.log)")
        #expect(line.contains("was=512") && line.contains("soft=\(hard)"), "\(line)")
    }

    static func lines(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init)
    }

    // MARK: Rules and credentials

    /// The README's first command, no options: `owner` (what firebase-admin sends with
    /// `FIREBASE_DATABASE_EMULATOR_HOST` set) is the admin, and the log says so.
    @Test func theDefaultServerTakesOwnerAsTheAdmin() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(executable: executable, dataDirectory: folder)
        do {
            let rules = #"{"rules": {".read": false, ".write": false}}"#
            let bearer = [("Authorization", "Bearer owner")]
            let set = try await Self.http(server, .PUT, "/.settings/rules.json", headers: bearer, body: rules)
            #expect(set.status == 200, "only the admin sets rules: \(set.body)")
            #expect(try await Self.http(server, .PUT, "/a.json", body: "1").status == 401)
            #expect(try await Self.http(server, .PUT, "/a.json?auth=owner", body: "1").status == 200)
            #expect(try await Self.http(server, .GET, "/a.json", headers: bearer).json == 1)
        } catch {
            await server.terminate()
            throw error
        }
        await server.terminate()
        #expect(server.log.contains("development server: no credential is configured"), "\(server.log)")
    }

    /// A server with an admin secret refuses `owner` with what to do (the same with tokens and no
    /// admin secret; ``expectSecured(_:)`` checks it on every secured server below).
    @Test func aServerWithAnAdminSecretRefusesOwnerSayingWhatToDo() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder,
            environment: ["CANOPY_ADMIN_SECRET": SignedTokens.adminSecret])
        let refused = try await Self.http(server, .GET, "/.settings/rules.json?auth=owner")
        await server.terminate()
        #expect(refused.status == 401)
        #expect(
            refused.json?["error"]?.stringValue
                == "'owner' is not the admin here: this server has an admin secret (--admin-secret, "
                + "CANOPY_ADMIN_SECRET): send it instead; or run a development server with --emulator")
        #expect(!server.log.contains("development server"), "\(server.log)")
    }

    @Test func rulesAuthSecretAndAdminSecretFromTheirOptions() async throws {
        try await Self.withSecuredProcess { folder in
            (
                [
                    "--rules", folder + "/rules.json", "--auth-secret", SignedTokens.secret,
                    "--admin-secret", SignedTokens.adminSecret,
                ], [:]
            )
        } _: { server in
            try await Self.expectSecured(server)
        }
    }

    @Test func rulesAuthSecretAndAdminSecretFromTheEnvironment() async throws {
        try await Self.withSecuredProcess { folder in
            (
                [],
                [
                    "CANOPY_RULES": folder + "/rules.json", "CANOPY_AUTH_SECRET": SignedTokens.secret,
                    "CANOPY_ADMIN_SECRET": SignedTokens.adminSecret,
                ]
            )
        } _: { server in
            try await Self.expectSecured(server)
        }
    }

    /// `--auth-issuer` and `--auth-audience` refuse tokens naming another (HS256 and ES256 alike),
    /// `--jwks-file` gives the ES256 key, `--auth-clock-skew` widens the expiry.
    @Test func issuerAudienceKeySetAndClockSkewFromTheirOptions() async throws {
        let issuer = "https://securetoken.google.com/canopy-e2e"
        let audience = "canopy-e2e"
        try await Self.withSecuredProcess { folder in
            (
                [
                    "--rules", folder + "/rules.json", "--auth-secret", SignedTokens.secret,
                    "--jwks-file", folder + "/keys.jwks.json", "--auth-issuer", issuer, "--auth-audience", audience,
                    "--auth-clock-skew", "3600",
                ], [:]
            )
        } _: { server in
            let project: [String: JSONValue] = ["iss": .string(issuer), "aud": .string(audience)]
            let signedWithSecret = try await SignedTokens.token(uid: "ada", claims: project)
            let signedWithKey = try await SignedTokens.keySetToken(uid: "ada", claims: project)
            for token in [signedWithSecret, signedWithKey] {
                let write = try await Self.http(server, .PUT, "/users/ada/name.json?auth=\(token)", body: #""Ada""#)
                #expect(write.status == 200, "\(write.body)")
                #expect(try await Self.http(server, .GET, "/users/ada/name.json?auth=\(token)").json == "Ada")
            }
            // Expired half an hour ago: within the skew of an hour (the default minute refuses it).
            let stale = try await SignedTokens.token(uid: "ada", lifetime: -1800, claims: project)
            #expect(try await Self.http(server, .GET, "/users/ada/name.json?auth=\(stale)").json == "Ada")

            let wrongIssuer = project.merging(["iss": "https://securetoken.google.com/other"]) { $1 }
            let wrongAudience = project.merging(["aud": "other"]) { $1 }
            let refused: [(String, String, String)] = [
                ("wrong iss", try await SignedTokens.token(uid: "ada", claims: wrongIssuer), "issuer"),
                ("wrong aud", try await SignedTokens.token(uid: "ada", claims: wrongAudience), "audience"),
                ("no iss or aud", try await SignedTokens.token(uid: "ada"), "issuer"),
                ("wrong iss, ES256", try await SignedTokens.keySetToken(uid: "ada", claims: wrongIssuer), "issuer"),
                ("wrong aud, ES256", try await SignedTokens.keySetToken(uid: "ada", claims: wrongAudience), "audience"),
            ]
            for (name, token, reason) in refused {
                let response = try await Self.http(server, .GET, "/users/ada/name.json?auth=\(token)")
                let message = response.json?["error"]?.stringValue ?? ""
                #expect(response.status == 401 && message.contains(reason), "\(name): \(response.body)")
            }
        }
    }

    /// `owner` is the admin and the SDKs' unsigned tokens are accepted only with `--emulator`
    /// (``expectSecured(_:)`` checks `owner` is refused without it).
    @Test func ownerAndUnsignedTokensWithEmulator() async throws {
        try await Self.withSecuredProcess { folder in
            (["--rules", folder + "/rules.json", "--emulator"], [:])
        } _: { server in
            let owner = [("Authorization", "Bearer owner")]
            #expect(try await Self.http(server, .GET, "/users.json").status == 401, "the rules apply")
            let write = try await Self.http(server, .PUT, "/users/ada/name.json", headers: owner, body: #""Ada""#)
            #expect(write.status == 200, "\(write.body)")
            #expect(try await Self.http(server, .GET, "/users.json", headers: owner).json == ["ada": ["name": "Ada"]])
            let mock = SignedTokens.unsigned(uid: "ada")
            #expect(try await Self.http(server, .GET, "/users/ada/name.json?auth=\(mock)").json == "Ada")
            #expect(try await Self.http(server, .GET, "/users.json?auth=\(mock)").status == 401)
        }
    }

    /// Starts the binary with the arguments and environment variables `options` gives for a folder
    /// holding `rules.json` (``SecurityRulesTests/rules``) and `keys.jwks.json`
    /// (``SignedTokens/keySet``), runs `body`, and stops it.
    static func withSecuredProcess(
        _ options: (_ folder: String) -> (arguments: [String], environment: [String: String]),
        _ body: (ServerProcess) async throws -> Void
    ) async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try SecurityRulesTests.rules.write(toFile: folder + "/rules.json", atomically: true, encoding: .utf8)
        try SignedTokens.keySet.write(toFile: folder + "/keys.jwks.json", atomically: true, encoding: .utf8)
        let (arguments, environment) = options(folder)
        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: folder + "/data", arguments: arguments, environment: environment)
        do {
            try await body(server)
        } catch {
            await server.terminate()
            throw error
        }
        await server.terminate()
    }

    static func http(
        _ server: ServerProcess, _ method: TestHTTPMethod, _ target: String, headers: [(String, String)] = [],
        body: String? = nil
    ) async throws -> TestHTTPResponse {
        try await TestServer.http(baseURL: server.baseURL, method, target, headers: headers, body: body)
    }

    /// What a server with ``SecurityRulesTests/rules``, HS256 tokens of ``SignedTokens/secret``, the
    /// admin secret ``SignedTokens/adminSecret`` and nothing else allows and refuses.
    static func expectSecured(_ server: ServerProcess) async throws {
        // The admin secret, as ?auth= or as a bearer token, is not held to the rules.
        let admin = SignedTokens.adminSecret
        let seeded = try await http(server, .PUT, "/users.json?auth=\(admin)", body: #"{"ada": {"name": "Ada"}}"#)
        #expect(seeded.status == 200, "\(seeded.body)")
        let all = try await http(server, .GET, "/users.json", headers: [("Authorization", "Bearer \(admin)")])
        #expect(all.status == 200 && all.json == ["ada": ["name": "Ada"]], "\(all.body)")
        #expect(try await http(server, .GET, "/users.json").status == 401, "the rules apply")

        // A token signed with the secret acts as its user, held to the rules.
        let ada = try await SignedTokens.token(uid: "ada")
        #expect(try await http(server, .GET, "/users/ada.json?auth=\(ada)").json == ["name": "Ada"])
        #expect(try await http(server, .PUT, "/users/ada/age.json?auth=\(ada)", body: "36").status == 200)
        #expect(try await http(server, .GET, "/users.json?auth=\(ada)").status == 401)
        #expect(try await http(server, .PUT, "/users/bob/name.json?auth=\(ada)", body: #""Bob""#).status == 401)

        // Refused credentials, each with its reason: another secret's signature, an expiry past the
        // default minute of skew, `owner` outside emulator mode, an unsigned token.
        let refused: [(String, String, String)] = [
            ("another secret", try await SignedTokens.token(uid: "ada", secret: otherSecret), "signature"),
            ("expired", try await SignedTokens.token(uid: "ada", lifetime: -1800), "expired"),
            ("owner", "owner", "--emulator"),
            ("unsigned", SignedTokens.unsigned(uid: "ada"), "emulator"),
        ]
        for (name, token, reason) in refused {
            let response = try await http(
                server, .GET, "/users/ada.json", headers: [("Authorization", "Bearer \(token)")])
            let message = response.json?["error"]?.stringValue ?? ""
            #expect(response.status == 401 && message.contains(reason), "\(name): \(response.body)")
        }
        #expect(try await http(server, .GET, "/users/ada.json?auth=\(admin)").json == ["name": "Ada", "age": 36])
    }

    /// An HS256 secret the servers here do not know, as long as theirs.
    static let otherSecret = "not-the-canopy-end-to-end-shared-secret-0123"
}
