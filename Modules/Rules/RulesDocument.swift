public import Tree

/// A compiled Firebase Realtime Database rules document: it decides whether a read or a write is
/// allowed, as Firebase's security rules language does.
///
/// Every rule expression is parsed, type-checked and compiled once, here; a check then evaluates
/// the compiled rules along the path it concerns, without parsing anything. A document is
/// immutable and `Sendable`: build it when the rules are set and share it between requests.
///
/// ```swift
/// let rules = try RulesDocument(parsing: """
///     {
///       "rules": {
///         "users": {
///           "$uid": {
///             // only the signed-in user may read and write their own record
///             ".read": "auth != null && auth.uid == $uid",
///             ".write": "auth != null && auth.uid == $uid",
///             ".validate": "newData.hasChildren(['name'])"
///           }
///         }
///       }
///     }
///     """)
/// let decision = rules.canSet("users/ada", to: profile, auth: AuthContext(uid: "ada", provider: "password"),
///                             root: data, now: nowInMilliseconds)
/// if !decision.isAllowed { /* answer permission_denied, log decision.denial */ }
/// ```
///
/// How rules apply (as Firebase documents them):
/// - `.read` and `.write` cascade: a rule that grants access at a location grants it for
///   everything below, and no rule below can take it back. A read or a write needs a grant at its
///   location or above; rules below it do not count (rules are not filters).
/// - `.validate` rules do not cascade. A write must satisfy the `.validate` rule of every location
///   whose new data is not null among the written locations, the locations above them, and every
///   location inside the written values. Deleting data (writing null) skips validation there.
/// - An update of several locations is allowed only if the write of each is, and validation sees
///   them all applied at once.
/// - A rule whose evaluation fails (say `auth.uid.length > 3` when signed out) counts as false.
public struct RulesDocument: Sendable {
    let root: RuleLocation

    /// Parses and compiles the rules document `text`: JSON (with `//` and `/* */` comments) of the
    /// form `{"rules": {...}}`. O(size of the document).
    ///
    /// - Throws: ``RulesError`` with the line and column of the first problem.
    public init(parsing text: String) throws(RulesError) {
        root = try RulesDocumentParser.parse(text)
    }

    /// Compiles a rules document already read as JSON (errors then point into its serialized form).
    public init(json: JSONValue) throws(RulesError) {
        try self.init(parsing: json.serialized(pretty: true))
    }

    init(root: RuleLocation) {
        self.root = root
    }

    /// Everything may be read and written: `{"rules": {".read": true, ".write": true}}`.
    public static let allowAll = RulesDocument(
        root: RuleLocation(
            read: CompiledRule(kind: .read, rulePath: "/", source: "true", expression: .constant(.bool(true))),
            write: CompiledRule(kind: .write, rulePath: "/", source: "true", expression: .constant(.bool(true)))))

    /// Nothing may be read or written (a new Firebase database in locked mode): `{"rules": {}}`.
    public static let denyAll = RulesDocument(root: RuleLocation())

    /// The `.indexOn` entries of the rules governing `path` (a named location, or else a wildcard
    /// one), so that a server can warn about queries by an unindexed child. O(depth).
    public func indexOn(at path: Path) -> [String] {
        var location = root
        for key in path.components {
            guard let (next, _) = location.child(key) else { return [] }
            location = next
        }
        return location.indexOn
    }

    /// Outcome of looking for a `.read` or `.write` grant.
    enum GrantResult {
        case granted(RuleReference)
        case notGranted(tried: [RuleFailure])
    }

    /// Looks for a `kind` rule that holds at `path` or above, from the root down: the first one
    /// found grants access. Only when none does are the rules walked again to say which failed.
    func grant(_ kind: RuleKind, at path: Path, context: inout EvaluationContext) -> GrantResult {
        var failures: [RuleFailure] = []
        if let rule = firstHolding(kind, at: path, context: &context, failures: &failures, collecting: false) {
            return .granted(rule)
        }
        _ = firstHolding(kind, at: path, context: &context, failures: &failures, collecting: true)
        return .notGranted(tried: failures)
    }

    /// The first `kind` rule at `path` or above that holds, as applied; when `collecting`, each
    /// that does not is added to `failures`.
    private func firstHolding(
        _ kind: RuleKind, at path: Path, context: inout EvaluationContext, failures: inout [RuleFailure],
        collecting: Bool
    ) -> RuleReference? {
        let keys = path.components
        var location = root
        var depth = 0
        while true {
            if let rule = location.rule(kind) {
                let prefix = keys.prefix(depth)
                context.enter(prefix, for: rule)
                switch rule.evaluate(in: &context) {
                case .passed:
                    return rule.reference(at: prefix)
                case .failed(let error):
                    if collecting { failures.append(RuleFailure(rule: rule.reference(at: prefix), error: error)) }
                }
            }
            guard depth < keys.count else { return nil }
            let key = keys[keys.startIndex + depth]
            guard !key.isPriorityKey, let (next, _) = location.child(key) else { return nil }
            location = next
            depth += 1
        }
    }
}
