import HTTPTypes
import Hummingbird
import Query
import Rules
import Tree

/// The admin's tools beside the rules document, for the console's Rules view and for curl: the
/// simulator (`POST /.settings/rules/simulate.json`) and the log of refused requests
/// (`GET /.settings/rules/refusals.json`). Both refuse every caller but the admin, as
/// `/.settings/rules.json` does.
extension RESTController {
    func rulesTool(
        _ tool: RESTRequest.RulesTool, _ request: inout Request, rest: RESTRequest, caller: Caller, database: Database
    ) async -> Response {
        switch tool {
        case .simulate:
            guard request.method == .post else {
                return RESTResponse.methodNotAllowed(request.method, allowed: "POST, OPTIONS")
            }
            guard caller.isAdmin else { return RESTResponse.permissionDenied }
            let body: JSONValue
            do {
                body = try await Self.jsonBody(of: &request, limit: maxBodyBytes)
            } catch let refusal {
                return refusal.response
            }
            return await simulate(body, rest: rest, database: database)
        case .refusals:
            guard request.method == .get || request.method == .head else {
                return RESTResponse.methodNotAllowed(request.method, allowed: "GET, HEAD, OPTIONS")
            }
            guard caller.isAdmin else { return RESTResponse.permissionDenied }
            let after = rest.parameters["after"].map { Int($0) }
            let limit = rest.parameters["limit"].map { Int($0) }
            guard let after = after ?? 0, let limit = limit ?? .max, after >= 0, limit > 0 else {
                return RESTResponse.error(.badRequest, "after and limit must be whole numbers (limit at least 1)")
            }
            let (log, cursor, capacity) = await database.refusalLog(after: after, limit: limit)
            let answer: JSONValue = [
                "cursor": .number(Double(cursor)), "capacity": .number(Double(capacity)),
                "refusals": .array(log.map(\.json)),
            ]
            return RESTResponse.json(answer, status: .ok, headers: [:], rest: rest)
        }
    }

    /// The simulator: `body` says what to simulate, `{"path", "operation": "read" | "set" |
    /// "update", "data", "auth", "query", "rules", "now"}`; the answer is the verdict and the rule
    /// that decided it (``RulesVerdict/json``).
    private func simulate(_ body: JSONValue, rest: RESTRequest, database: Database) async -> Response {
        let simulation: RulesSimulation
        let draft: RulesDocument?
        do {
            (simulation, draft) = try Self.simulation(from: body)
        } catch {
            return RESTResponse.error(.badRequest, error.message)
        }
        do {
            let verdict = try await database.simulate(simulation, rules: draft)
            var answer = verdict.json
            answer["path"] = .string(simulation.path.description)
            answer["operation"] = .string(simulation.operation.rawValue)
            answer["rules"] = .string(draft == nil ? "saved" : "draft")
            return RESTResponse.json(.object(answer), status: .ok, headers: [:], rest: rest)
        } catch {
            return RESTResponse.error(.badRequest, error.message)
        }
    }

    /// Why a simulator request was refused.
    struct SimulationRefusal: Error {
        let message: String
    }

    private static func simulation(
        from body: JSONValue
    ) throws(SimulationRefusal) -> (RulesSimulation, RulesDocument?) {
        guard case .object = body else {
            throw SimulationRefusal(message: "The body must be an object: {\"path\", \"operation\", …}")
        }
        let path: Path
        do {
            path = try Path(validating: body["path"]?.stringValue ?? "/")
        } catch {
            throw SimulationRefusal(message: "Invalid path: \(error.description)")
        }
        guard let name = body["operation"]?.stringValue, let operation = RulesSimulation.Operation(rawValue: name)
        else {
            throw SimulationRefusal(message: "operation must be \"read\", \"set\" or \"update\"")
        }
        var simulation = RulesSimulation(path: path, operation: operation, data: body["data"] ?? .null)
        switch body["auth"] ?? .null {
        case .null: simulation.auth = nil
        case .object(let members): simulation.auth = AuthContext(json: .object(members))
        default:
            throw SimulationRefusal(message: "auth must be null (unauthenticated) or an object (the auth variable)")
        }
        switch body["query"] ?? .null {
        case .null: break
        case .object(let members):
            // REST's query parameters (`orderBy`, `startAt`, …), each as it would be in a URL.
            let parameters = members.mapValues { $0.stringValue ?? $0.serialized() }
            do {
                simulation.params = try QueryParams(restParameters: parameters)
            } catch {
                throw SimulationRefusal(message: "Invalid query: \(error.description)")
            }
        default: throw SimulationRefusal(message: "query must be an object of REST query parameters")
        }
        switch body["now"] ?? .null {
        case .null: break
        case .number(let now): simulation.now = now
        default: throw SimulationRefusal(message: "now must be milliseconds since 1970")
        }
        switch body["rules"] ?? .null {
        case .null:
            return (simulation, nil)
        case .string(let text):
            do {
                return (simulation, try RulesDocument(parsing: text))
            } catch {
                throw SimulationRefusal(message: "Line \(error.line), column \(error.column): \(error.reason)")
            }
        default:
            throw SimulationRefusal(message: "rules must be the text of a rules document")
        }
    }
}

extension Database {
    /// The refusals logged after sequence number `after` (newest first, at most `limit`), the last
    /// sequence number, and how many the log keeps.
    func refusalLog(after: Int, limit: Int) -> ([RuleRefusal], cursor: Int, capacity: Int) {
        (refusals.refusals(after: after, limit: limit), refusals.lastSequence, refusals.capacity)
    }
}

extension RulesVerdict {
    /// `{"allowed", "enforced", "now", "summary", "rule" | "denial"}`.
    var json: [String: JSONValue] {
        var answer: [String: JSONValue] = [
            "allowed": .bool(decision.isAllowed), "enforced": .bool(enforced), "now": .number(now),
            "summary": .string(decision.description),
        ]
        switch decision {
        case .allowed(let rule): answer["rule"] = rule.map(\.json) ?? .null
        case .denied(let denial): answer["denial"] = denial.json
        }
        return answer
    }
}

extension RuleRefusal {
    var json: JSONValue {
        [
            "sequence": .number(Double(sequence)), "time": .number(time), "path": .string(path.description),
            "operation": .string(operation.rawValue), "uid": uid.map { .string($0) } ?? .null,
            "authenticated": .bool(authenticated), "transport": transport.map { .string($0.rawValue) } ?? .null,
            "summary": .string(denial.description), "denial": denial.json,
        ]
    }
}

extension RuleDenial {
    /// `{"reason": "notGranted", "kind", "path", "tried": [failure]}` or
    /// `{"reason": "invalidData", "failure"}`, with `text`, the denial as one sentence.
    var json: JSONValue {
        switch self {
        case .notGranted(let kind, let path, let tried):
            [
                "reason": "notGranted", "kind": .string(kind.key), "path": .string(path.description),
                "tried": .array(tried.map(\.json)), "text": .string(description),
            ]
        case .invalidData(let failure):
            ["reason": "invalidData", "failure": failure.json, "text": .string(description)]
        }
    }
}

extension RuleFailure {
    /// `{"rule", "error", "text"}`: the rule, why its evaluation failed (`null`: it was false).
    var json: JSONValue {
        ["rule": rule.json, "error": error.map { .string($0) } ?? .null, "text": .string(description)]
    }
}

extension RuleReference {
    /// `{"kind": ".write", "location": "/users/$uid", "path": "/users/ada", "expression", "text"}`.
    var json: JSONValue {
        [
            "kind": .string(kind.key), "location": .string(rulePath), "path": .string(path.description),
            "expression": .string(expression), "text": .string(description),
        ]
    }
}
