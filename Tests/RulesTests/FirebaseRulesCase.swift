import Foundation
import Rules
import Tree

/// One case of `Fixtures/firebase-rules-cases.json`: a rules document, data, who asks, an
/// operation and its expected outcome.
struct FirebaseRulesCase {
    let id: String
    let json: JSONValue

    var rules: JSONValue { json["rules"] ?? .null }
    var operation: String { json["op"]?.stringValue ?? "" }
    var expect: String { json["expect"]?.stringValue ?? "" }
    var note: String { json["note"]?.stringValue ?? "" }

    /// Why the case does not run, if it does not.
    var skipReason: String? {
        if let reason = json["skip"]?.stringValue { return "skip: \(reason)" }
        if let reason = json["disputed"]?.stringValue { return "disputed: \(reason)" }
        return nil
    }

    static func loadAll() throws -> [FirebaseRulesCase] {
        guard
            let url = Bundle.module.url(
                forResource: "firebase-rules-cases", withExtension: "json", subdirectory: "Fixtures")
        else { throw CaseError("firebase-rules-cases.json is missing from the test bundle") }
        guard case .array(let cases) = try JSONValue(parsing: Data(contentsOf: url)) else {
            throw CaseError("firebase-rules-cases.json is not an array")
        }
        return cases.map { FirebaseRulesCase(id: $0["id"]?.stringValue ?? "?", json: $0) }
    }

    /// `now` for the case: the one it needs, or the clock (cases without `needs_now` hold at any time).
    var now: Int64 {
        if let fixed = json["needs_now"]?.numberValue { return Int64(fixed) }
        return Int64(Date().timeIntervalSince1970 * 1000)
    }

    /// Runs the case; returns what happened in the fixture's words (`allow`, `deny`, `accept`,
    /// `reject`) and a detail for messages.
    func run() throws -> (outcome: String, detail: String) {
        let text = rules.serialized(pretty: true)
        if operation == "setRules" {
            do {
                _ = try RulesDocument(parsing: text)
                return ("accept", "parsed")
            } catch {
                return ("reject", error.description)
            }
        }
        let document = try RulesDocument(parsing: text)
        let now = now
        let context = ServerValueContext(now: Double(now))
        let root = try Node(json: json["data"] ?? .null)
        let auth = json["auth"].flatMap { $0.isNull ? nil : AuthContext(json: $0) }
        let path = Path(json["path"]?.stringValue ?? "/")
        let value = json["value"] ?? .null
        let decision: RuleDecision
        switch operation {
        case "read":
            decision = document.canRead(path, auth: auth, root: root, query: try query(), now: now)
        case "set":
            let node = try Node(json: value, at: path, existing: root.child(at: path), serverValues: context)
            decision = document.canSet(path, to: node, auth: auth, root: root, now: now)
        case "update":
            guard case .object(let members) = value else { throw CaseError("\(id): an update value is an object") }
            var children: [(Path, Node)] = []
            for (relative, member) in members.sorted(by: { $0.key < $1.key }) {
                let target = path.child(Path(relative))
                let node = try Node(json: member, at: target, existing: root.child(at: target), serverValues: context)
                children.append((Path(relative), node))
            }
            decision = document.canUpdate(path, children: children, auth: auth, root: root, now: now)
        default:
            throw CaseError("\(id): unknown op \(operation)")
        }
        return (decision.isAllowed ? "allow" : "deny", decision.description)
    }

    /// The case's query as rules see it: `orderBy` is `$key`, `$value`, `$priority` or a child path.
    private func query() throws -> RuleQuery? {
        guard case .object(let members)? = json["query"] else { return nil }
        var query = RuleQuery()
        for (name, value) in members {
            switch name {
            case "orderBy":
                switch value.stringValue {
                case "$key": query.orderBy = .key
                case "$value": query.orderBy = .value
                case "$priority": query.orderBy = .priority
                case let child?: query.orderBy = .child(Path(child))
                case nil: throw CaseError("\(id): orderBy is not a string")
                }
            case "startAt": query.startAt = RuleQuery.Bound(try Node(json: value))
            case "endAt": query.endAt = RuleQuery.Bound(try Node(json: value))
            case "equalTo": query.equalTo = RuleQuery.Bound(try Node(json: value))
            case "limitToFirst": query.limitToFirst = value.numberValue.map { Int($0) }
            case "limitToLast": query.limitToLast = value.numberValue.map { Int($0) }
            default: throw CaseError("\(id): unknown query parameter \(name)")
            }
        }
        return query
    }
}

struct CaseError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
