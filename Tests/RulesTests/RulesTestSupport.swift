import Rules
import Tree

/// A fixed clock reading for tests: 2024-01-01T00:00:00Z in milliseconds.
let testNow: Int64 = 1_704_067_200_000

/// A rules document from the `rules` object given as JSON.
func rulesDocument(_ rules: JSONValue) throws -> RulesDocument {
    try RulesDocument(json: ["rules": rules])
}

/// The data tree `json`.
func tree(_ json: JSONValue) throws -> Node {
    try Node(json: json)
}

/// What `.read` rule `expression`, alone at the root, decides for a read of `/` of `data` by `auth`.
func readDecision(
    _ expression: String, data: JSONValue = nil, auth: JSONValue? = nil, query: RuleQuery? = nil
) throws -> RuleDecision {
    let rules = try rulesDocument([".read": .string(expression)])
    return rules.canRead(
        .root, auth: auth.map(AuthContext.init(json:)), root: try tree(data), query: query, now: testNow)
}

/// Whether `.read` rule `expression`, alone at the root, grants a read of `/` of `data` by `auth`.
func holds(_ expression: String, data: JSONValue = nil, auth: JSONValue? = nil) throws -> Bool {
    try readDecision(expression, data: data, auth: auth).isAllowed
}

/// The reason evaluating `expression` as a `.read` rule failed, if it failed with an error.
func evaluationError(_ expression: String, data: JSONValue = nil, auth: JSONValue? = nil) throws -> String? {
    guard case .denied(.notGranted(_, _, let tried)) = try readDecision(expression, data: data, auth: auth) else {
        return nil
    }
    return tried.first?.error
}

/// The error refusing the document `text`, if it is refused.
func parseError(_ text: String) -> RulesError? {
    do {
        _ = try RulesDocument(parsing: text)
        return nil
    } catch {
        return error
    }
}

/// The error refusing the `.read` rule `expression` alone at the root, if it is refused.
func ruleError(_ expression: String) -> RulesError? {
    parseError(JSONValue.object(["rules": [".read": .string(expression)]]).serialized())
}
