import Logging
import Presence
import Query
import Rules
import Tree

/// A rules document given when the server starts (`canopy-server --rules FILE`), parsed.
struct StartupRules: Sendable {
    let text: String
    let document: RulesDocument
}

extension Database {
    /// Whether `caller` may read `path` with `params` (the admin always may); a refusal is logged
    /// as `refusal` (see ``refusals``).
    func mayRead(_ path: Path, params: QueryParams, caller: Caller, refusal: RefusedOperation = .read) -> Bool {
        readAccess(path, params: params, caller: caller, refusal: refusal) != .denied
    }

    /// How the rules let `caller` read `path` with `params`: not at all, or allowed, and then
    /// whether by a rule that reads the data (which a write may turn). A refusal is logged as
    /// `refusal`, unless that is `nil` (a listen checked again is no request).
    func readAccess(_ path: Path, params: QueryParams, caller: Caller, refusal: RefusedOperation?) -> ReadAccess {
        guard enforcesRules, case .user(let auth) = caller else { return .allowed(dependsOnData: false) }
        let decision = readDecision(path, params: params, auth: auth, rules: rules, now: Int64(Self.now()))
        guard allowed(decision, path, refusal, auth: auth) else { return .denied }
        guard case .allowed(let rule) = decision else { return .allowed(dependsOnData: false) }
        return .allowed(dependsOnData: rule?.readsData ?? false)
    }

    /// Whether `caller` may replace the data at `path` by `node` (server values resolved at
    /// `context.now`, which is also the rules' `now`); a refusal is logged as `refusal`.
    func maySet(
        _ path: Path, to node: Node, caller: Caller, at context: ServerValueContext,
        refusal: RefusedOperation = .set
    ) -> Bool {
        guard enforcesRules, case .user(let auth) = caller else { return true }
        let decision = setDecision(path, to: node, auth: auth, rules: rules, now: Int64(context.now))
        return allowed(decision, path, refusal, auth: auth)
    }

    /// Whether `caller` may apply the multi-path update `children` (relative to `path`; server
    /// values resolved at `context.now`, which is also the rules' `now`); a refusal is logged as
    /// `refusal`.
    func mayUpdate(
        _ path: Path, children: [(path: Path, node: Node)], caller: Caller, at context: ServerValueContext,
        refusal: RefusedOperation = .update
    ) -> Bool {
        guard enforcesRules, case .user(let auth) = caller else { return true }
        let decision = updateDecision(
            path, children: children.map { ($0.path, $0.node) }, auth: auth, rules: rules, now: Int64(context.now))
        return allowed(decision, path, refusal, auth: auth)
    }

    /// What `rules` decide for a read of `path` with `params` by `auth` at `now`, on the data held.
    func readDecision(
        _ path: Path, params: QueryParams, auth: AuthContext?, rules: RulesDocument, now: Int64
    ) -> RuleDecision {
        let query = params.isDefault ? nil : RuleQuery(params)
        return rules.canRead(path, auth: auth, root: root, query: query, now: now)
    }

    /// What `rules` decide for replacing the data at `path` by `node`, by `auth` at `now`.
    func setDecision(_ path: Path, to node: Node, auth: AuthContext?, rules: RulesDocument, now: Int64) -> RuleDecision
    {
        rules.canSet(path, to: node, auth: auth, root: root, now: now)
    }

    /// What `rules` decide for the multi-path update `children` at `path`, by `auth` at `now`.
    func updateDecision(
        _ path: Path, children: [(Path, Node)], auth: AuthContext?, rules: RulesDocument, now: Int64
    ) -> RuleDecision {
        rules.canUpdate(path, children: children, auth: auth, root: root, now: now)
    }

    private func allowed(
        _ decision: RuleDecision, _ path: Path, _ refusal: RefusedOperation?, auth: AuthContext?
    ) -> Bool {
        guard case .denied(let denial) = decision else { return true }
        logger.debug("permission denied", metadata: ["namespace": "\(name)", "path": "\(path)", "why": "\(denial)"])
        if let refusal {
            refusals.record(
                RuleRefusal(
                    time: Self.now(), path: path, operation: refusal, uid: Self.uid(of: auth),
                    authenticated: auth != nil, transport: RequestTransport.current, denial: denial))
        }
        return false
    }

    /// `auth.uid` when it is a string.
    static func uid(of auth: AuthContext?) -> String? {
        guard case .string(let uid)? = auth?.variable.child(ChildKey("uid")).leafValue else { return nil }
        return uid
    }

    /// Gives the listeners of `subscriberID` a new caller (the connection authenticated again or
    /// its credential expired) and revokes those it may no longer read.
    func reauthenticate(_ subscriberID: Int, as caller: Caller) {
        listeners.forEach(of: subscriberID) { $0.caller = caller }
        revokeListeners(of: subscriberID)
    }

    /// Revokes the listens the rules no longer allow: those of `subscriberID`, or every one (`nil`).
    /// Each is removed and its subscriber told (`c` on a realtime connection, `cancel` on an event
    /// stream).
    func revokeListeners(of subscriberID: Int?) {
        guard enforcesRules else { return }
        if let subscriberID {
            var own: [Listener] = []
            listeners.forEach(of: subscriberID) { own.append($0) }
            recheck(own)
        } else {
            recheck(listeners.all())
        }
    }

    /// After writes: revokes the listens allowed by rules that read the data, if the data no
    /// longer allows them (a user taken off a room's members stops getting its messages).
    func recheckDataDependentListens() {
        guard enforcesRules, listeners.hasDataDependent else { return }
        recheck(listeners.dataDependentListeners())
    }

    private func recheck(_ candidates: [Listener]) {
        var lost: [Listener] = []
        for var listener in candidates {
            switch readAccess(listener.path, params: listener.params, caller: listener.caller, refusal: nil) {
            case .denied:
                lost.append(listener)
            case .allowed(let dependsOnData) where dependsOnData != listener.dependsOnData:
                listener.dependsOnData = dependsOnData
                listeners.add(listener)
            case .allowed:
                break
            }
        }
        for listener in lost {
            let subscriber = listener.subscriber
            unlisten(subscriberID: subscriber.subscriberID, path: listener.path, queryID: listener.queryID)
            // After what was pushed to it before, as the official server does.
            inCommitOrder { subscriber.revoke(path: listener.path, params: listener.params) }
        }
        if !lost.isEmpty {
            logger.info("revoked listens the rules no longer allow", metadata: ["count": "\(lost.count)"])
        }
    }
}

/// How the rules let a caller read a location.
enum ReadAccess: Equatable {
    case denied
    /// Allowed; `dependsOnData` when the rule that allows it reads the data.
    case allowed(dependsOnData: Bool)
}

extension RuleQuery {
    /// The `query` variable of a read with `params`.
    init(_ params: QueryParams) {
        func bound(_ bound: QueryParams.Bound?) -> Bound? {
            guard let bound else { return nil }
            let key = bound.name.flatMap { $0 == .min || $0 == .max ? nil : $0 }
            return Bound(bound.value, key: key)
        }
        var equalTo: Bound?
        if let start = params.start, let end = params.end, start.inclusive, end.inclusive,
            start.value == end.value, start.name == end.name
        {
            equalTo = bound(start)
        }
        var first: Int?
        var last: Int?
        switch params.limit {
        case .first(let count)?: first = count
        case .last(let count)?: last = count
        case nil: break
        }
        self.init(
            orderBy: params.index, startAt: bound(params.start), endAt: bound(params.end), equalTo: equalTo,
            limitToFirst: first, limitToLast: last)
    }
}

extension Database {
    /// Whether `caller` may register the onDisconnect `operation`: whether it could make that write
    /// now (it is checked again when it runs).
    func mayRegister(_ operation: DisconnectOperation, as caller: Caller) -> Bool {
        guard enforcesRules, !caller.isAdmin else { return true }
        let context = ServerValueContext(now: Self.now())
        let path = operation.path
        do throws(TreeError) {
            switch operation.kind {
            case .set(let json):
                let node = try Node(json: json, at: path, existing: root.child(at: path), serverValues: context)
                return maySet(path, to: node, caller: caller, at: context, refusal: .onDisconnectSet)
            case .update(let members):
                let children = try Self.updateChildren(members, at: path) { absolute, value throws(TreeError) in
                    try Node(json: value, at: absolute, existing: root.child(at: absolute), serverValues: context)
                }
                return mayUpdate(path, children: children, caller: caller, at: context, refusal: .onDisconnectUpdate)
            }
        } catch {
            return false
        }
    }
}
