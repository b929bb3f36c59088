import CanopyTesting
import Foundation
import Testing
import Tree

/// The rules simulator against the rules corpus (`Tests/RulesTests/Fixtures/firebase-rules-cases.json`,
/// the cases `FirebaseRulesCaseTests` runs): for each case its rules and data are set on a real
/// server, and the simulator's verdict must be the recorded one and the server's own answer to the
/// same request, made as the case's user (`auth_variable_override`).
struct RulesSimulatorCorpusTests {
    static let admin = [("Authorization", "Bearer owner")]

    static func corpus(packageFile: String = #filePath) throws -> [JSONValue] {
        let tests = URL(fileURLWithPath: packageFile).deletingLastPathComponent().deletingLastPathComponent()
        let file = tests.appendingPathComponent("RulesTests/Fixtures/firebase-rules-cases.json")
        guard case .array(let cases) = try JSONValue(parsing: Data(contentsOf: file)) else {
            throw CorpusError("\(file.path) is not an array")
        }
        return cases
    }

    struct CorpusError: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) { self.description = description }
    }

    /// The case's query as REST's parameters, each as it would be in a URL.
    static func restQuery(_ query: JSONValue?) -> [(String, String)] {
        guard case .object(let members)? = query else { return [] }
        return members.sorted { $0.key < $1.key }.map { name, value in
            (name, name == "orderBy" ? JSONValue.string(value.stringValue ?? "").serialized() : value.serialized())
        }
    }

    static func target(_ path: String, _ parameters: [(String, String)]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_~"))
        let keys = path.split(separator: "/").map {
            String($0).addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        }
        let query = parameters.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed) ?? $1)" }
        return "/" + keys.joined(separator: "/") + ".json" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// `allow` for 200, `deny` for 401 (or another status the case accepts as a refusal).
    static func outcome(_ status: Int, _ rulesCase: JSONValue) -> String {
        if status == 200 { return "allow" }
        let alternatives = rulesCase["alt_deny_status"]?.arrayValue?.compactMap(\.numberValue) ?? []
        return status == 401 || alternatives.contains(Double(status)) ? "deny" : "status \(status)"
    }

    @Test func theSimulatorAgreesWithTheRecordedOutcomesAndWithTheServer() async throws {
        let cases = try Self.corpus()
        #expect(cases.count == 350)
        try await withTestServer { server in
            var (simulated, answered, skipped) = (0, 0, 0)
            for rulesCase in cases {
                let id = rulesCase["id"]?.stringValue ?? "?"
                if rulesCase["skip"] != nil || rulesCase["disputed"] != nil {
                    skipped += 1
                    continue
                }
                let expect = rulesCase["expect"]?.stringValue ?? ""
                let rules = (rulesCase["rules"] ?? .null).serialized(pretty: true)
                if rulesCase["op"] == "setRules" {
                    // The simulator evaluates a draft only if the server would take it as the rules.
                    let draft = try await server.http(
                        .POST, "/.settings/rules/simulate.json", headers: Self.admin,
                        body: (["path": "/", "operation": "read", "rules": .string(rules)] as JSONValue).serialized())
                    let set = try await server.http(.PUT, "/.settings/rules.json", headers: Self.admin, body: rules)
                    let (fromDraft, fromSet) = (draft.status == 200, set.status == 200)
                    #expect(fromDraft == fromSet, "\(id): simulator \(draft.status), server \(set.status)")
                    #expect((fromDraft ? "accept" : "reject") == expect, "\(id): \(draft.body)")
                    simulated += 1
                    continue
                }
                let set = try await server.http(.PUT, "/.settings/rules.json", headers: Self.admin, body: rules)
                #expect(set.status == 200, "\(id): \(set.body)")
                let data = try await server.http(
                    .PUT, "/.json", headers: Self.admin, body: (rulesCase["data"] ?? .null).serialized())
                #expect(data.status == 200, "\(id): \(data.body)")

                let operation = rulesCase["op"]?.stringValue ?? ""
                let path = rulesCase["path"]?.stringValue ?? "/"
                let auth = rulesCase["auth"] ?? .null
                var body: JSONValue = [
                    "path": .string(path), "operation": .string(operation), "data": rulesCase["value"] ?? .null,
                    "auth": auth,
                ]
                let query = Self.restQuery(rulesCase["query"])
                if case .object(var members) = body {
                    if !query.isEmpty {
                        members["query"] = .object(Dictionary(uniqueKeysWithValues: query.map { ($0, .string($1)) }))
                    }
                    if let now = rulesCase["needs_now"] { members["now"] = now }
                    body = .object(members)
                }
                let simulation = try await server.http(
                    .POST, "/.settings/rules/simulate.json", headers: Self.admin, body: body.serialized())
                let verdict =
                    switch simulation.json?["allowed"] {
                    case .bool(true)?: "allow"
                    case .bool(false)?: "deny"
                    default: Self.outcome(simulation.status, rulesCase)
                    }
                #expect(verdict == expect, "\(id): simulator said \(simulation.body); \(rulesCase["note"] ?? .null)")
                simulated += 1
                // The server's own answer, but for a case that needs a fixed clock.
                guard rulesCase["needs_now"] == nil else { continue }
                let asUser = ("auth_variable_override", auth.serialized())
                let real: TestHTTPResponse
                switch operation {
                case "read":
                    real = try await server.http(.GET, Self.target(path, [asUser] + query), headers: Self.admin)
                case "set":
                    real = try await server.http(
                        .PUT, Self.target(path, [asUser]), headers: Self.admin,
                        body: (rulesCase["value"] ?? .null).serialized())
                default:
                    real = try await server.http(
                        .PATCH, Self.target(path, [asUser]), headers: Self.admin,
                        body: (rulesCase["value"] ?? .null).serialized())
                }
                #expect(
                    Self.outcome(real.status, rulesCase) == verdict,
                    "\(id): the server answered \(real.status) \(real.body), the simulator \(simulation.body)")
                answered += 1
            }
            print(
                "rules simulator: \(simulated) cases simulated, \(answered) also asked of the server, \(skipped) skipped"
            )
            #expect(simulated + skipped == cases.count)
        }
    }
}
