import Query
import Rules
import Tree

/// A request for the rules simulator: what the rules would decide if someone made it now.
struct RulesSimulation: Sendable {
    enum Operation: String, Sendable {
        case read
        case set
        case update
    }

    var path: Path
    var operation: Operation
    /// The value a set writes, or the members of an update (paths relative to ``path``).
    var data: JSONValue = .null
    /// The query of a read.
    var params = QueryParams()
    /// The `auth` variable; `nil`: unauthenticated.
    var auth: AuthContext?
    /// The rules' `now` (milliseconds since 1970); `nil`: the server's clock.
    var now: Double?
}

/// What the simulator found.
struct RulesVerdict: Sendable {
    var decision: RuleDecision
    /// Whether the rules evaluated are enforced: false for the saved rules of a namespace that never
    /// had rules set, where everything is allowed.
    var enforced: Bool
    /// The `now` the rules saw.
    var now: Double
}

extension Database {
    /// What `rules` (the rules in force when `nil`) decide for `simulation` on the data held now,
    /// evaluated as a request's would be (``readAccess(_:params:caller:refusal:)``,
    /// ``maySet(_:to:caller:at:refusal:)``, ``mayUpdate(_:children:caller:at:refusal:)``); nothing
    /// is written or logged. Throws what a write of data it refuses before the rules are asked is
    /// answered.
    func simulate(_ simulation: RulesSimulation, rules draft: RulesDocument? = nil) throws(WriteError) -> RulesVerdict {
        let rules = draft ?? rules
        let now = simulation.now ?? Self.now()
        let (path, auth, time) = (simulation.path, simulation.auth, Int64(now))
        let context = ServerValueContext(now: now)
        var members: [String: JSONValue] = [:]
        if simulation.operation == .update {
            guard case .object(let found) = simulation.data else {
                throw .invalidData("an update must be an object of paths and values")
            }
            members = found
        }
        let decision: RuleDecision
        do throws(TreeError) {
            switch simulation.operation {
            case .read:
                decision = readDecision(path, params: simulation.params, auth: auth, rules: rules, now: time)
            case .set:
                let node = try newNode(simulation.data, at: path, context: context)
                decision = setDecision(path, to: node, auth: auth, rules: rules, now: time)
            case .update:
                let children = try newChildren(members, at: path, context: context)
                decision = updateDecision(path, children: children, auth: auth, rules: rules, now: time)
            }
        } catch {
            throw .refused(error)
        }
        return RulesVerdict(decision: decision, enforced: draft != nil || enforcesRules, now: now)
    }
}
