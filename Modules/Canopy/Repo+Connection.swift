import Foundation
import Logging
import Query
import RealtimeClientSocket
import SyncEngine
import Synchronization
import Transport
import Tree

extension Repo {
    /// Connects, serves the connection until it ends, and reconnects with the official clients'
    /// backoff (1 s growing ×1.3 to 30 s, jittered, reset after 30 s connected), until the task is
    /// cancelled. While `goOffline()` holds, it waits. When the network path comes back while it
    /// waits, it tries at once with the backoff reset, as Firebase's SDK does.
    func runConnection() async {
        var backoff = reconnectBackoff
        // Redirects followed at once since the last connection that opened: a loop of servers
        // sending the client to one another falls back to the backoff.
        var redirects = 0
        while !Task.isCancelled {
            await waitWhileInterrupted()
            if Task.isCancelled { return }
            let (lastSession, target, pathReturned) = state.withLock { state in
                defer { state.networkPathReturned = false }
                return (state.lastSessionID, state.redirect ?? endpoint, state.networkPathReturned)
            }
            if pathReturned { backoff.reset() }
            do {
                let link = try await connector(target, lastSession)
                let started = ContinuousClock.now
                guard opened(link, at: target) else {
                    link.close()
                    continue
                }
                redirects = 0
                for await message in link.messages { handle(message) }
                backoff.connectionLasted(ContinuousClock.now - started)
                closed(link)
            } catch RealtimeClientError.redirected(let host) {
                // Sent elsewhere instead of a hello: connect there at once (a few times in a row).
                redirects += 1
                let redirect = endpoint.redirected(to: host)
                if redirect == nil {
                    logger.warning("the server redirected to an invalid host", metadata: ["host": "\(host)"])
                }
                state.withLock { state in
                    state.redirect = redirect
                    state.reconnectAtOnce = redirect != nil && redirects <= Self.maxRedirectsAtOnce
                }
            } catch {
                var refusal: DatabaseError?
                if case RealtimeClientError.certificateRefused(let message) = error {
                    refusal = .certificateRefused(message)
                } else {
                    logger.debug("could not connect", metadata: ["endpoint": "\(target)", "error": "\(error)"])
                }
                // A host the server redirected to that cannot be reached is not tried again.
                let (waiters, isNew) = state.withLock { state in
                    state.redirect = nil
                    state.lastAttemptFailed = true
                    let isNew = refusal != nil && refusal != state.connectionError
                    if refusal != nil { state.connectionError = refusal }
                    return (takeConnectionWaiters(in: &state), isNew)
                }
                // An error the app must act on, logged once (not at every retry).
                if isNew, let refusal { logger.error("cannot connect: \(refusal)") }
                for waiter in waiters { waiter.resume() }
            }
            if Task.isCancelled { return }
            if state.withLock({ $0.interrupted }) { continue }
            // The server asked to reconnect elsewhere: at once, without a backoff delay.
            let atOnce = state.withLock { state in
                let atOnce = state.reconnectAtOnce
                state.reconnectAtOnce = false
                return atOnce
            }
            if atOnce { continue }
            let delay = backoff.nextDelay()
            logger.debug("reconnecting", metadata: ["in": "\(delay)"])
            await pause(for: delay)
        }
    }

    /// Redirects (`r` instead of a hello) followed without a backoff delay before one connection opens.
    static let maxRedirectsAtOnce = 5

    /// Sleeps for `delay`, or until `goOnline()` or the network path coming back cuts the wait
    /// short (also when it came back during the attempt that just failed).
    private func pause(for delay: Duration) async {
        let wait = Task { try await Task.sleep(for: delay) }
        let pathReturned = state.withLock { state in
            state.reconnectWait = wait
            return state.networkPathReturned
        }
        if pathReturned { wait.cancel() }
        _ = await wait.result
    }

    private func waitWhileInterrupted() async {
        while !Task.isCancelled {
            let wait: Task<Void, any Error>? = state.withLock { state in
                guard state.interrupted else { return nil }
                let wait = Task { try await Task.sleep(for: .seconds(3600)) }
                state.reconnectWait = wait
                return wait
            }
            guard let wait else { return }
            _ = await wait.result
        }
    }

    /// `goOffline()`: closes the connection and stops reconnecting.
    func interrupt() {
        let waiters = state.withLock { state in
            state.interrupted = true
            state.link?.close()
            return takeConnectionWaiters(in: &state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// `goOnline()`: reconnects at once.
    func resume() {
        start()
        state.withLock { state in
            state.interrupted = false
            if !state.connected { state.lastAttemptFailed = false }
            state.reconnectWait?.cancel()
        }
    }

    // MARK: Connected

    /// The hello arrived: `.info` says so, then listens, unacknowledged writes (in their original
    /// order), queued onDisconnect requests and transactions are sent again, in that order. A
    /// connection that opens after `goOffline()` is closed unused (returns `false`).
    private func opened(_ link: any ServerLink, at target: RealtimeEndpoint) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            guard !state.interrupted else { return nil }
            // Later connections go where the hello says this server is reached (in a cluster, its
            // own host rather than the one this client was first given).
            if followsHelloHost, let named = target.redirected(to: link.hello.host), named != target {
                logger.debug("the server names its host", metadata: ["host": "\(link.hello.host)"])
                state.redirect = named
            }
            state.link = link
            state.linkHost = target.host
            state.linkNumber += 1
            state.connected = true
            state.networkPathReturned = false
            state.lastAttemptFailed = false
            state.connectionError = nil
            state.lastSessionID = link.hello.sessionID
            state.serverTimeOffset = Double(link.hello.timestamp) - (Date().timeIntervalSince1970 * 1000).rounded()
            var events = state.info.applyServerOverwrite(Node(.number(state.serverTimeOffset)), at: Self.offsetPath)
            events += state.info.applyServerOverwrite(Node(.bool(true)), at: Self.connectedPath)
            dispatch(events, in: &state)
            link.send(.request(ClientRequest(number: state.nextRequestNumber, action: .stats(Self.sdkStats))))
            state.nextRequestNumber += 1
            sendAuth(in: &state)
            for key in state.listenOrder { sendListen(key, in: &state) }
            resendWrites(in: &state)
            let queued = state.queued
            state.queued = []
            for request in queued { sendOrQueue(request, in: &state) }
            return takeConnectionWaiters(in: &state)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume() }
        rerunUnsentTransactions()
        // A provider may have a newer token than the one just sent (say, refreshed while offline).
        fetchProvidedToken(forceRefresh: false)
        logger.debug("connected", metadata: ["session": "\(link.hello.sessionID)"])
        return true
    }

    /// Sends the unacknowledged writes and transaction puts again, in the order of their write ids
    /// (the order they were first sent in), each under its write id when the server takes them, so
    /// the server answers one it already applied without applying it again. For a server that does
    /// not, transaction queues whose put was cut off run again on fresh data instead. Only what
    /// was not sent on this connection goes, and nothing while a token waits to be accepted.
    func resendWrites(in state: inout State) {
        enum Resend {
            case write(Int)
            case transactionPut(Path, TransactionPut)
        }
        guard writesMayGo(state) else { return }
        let link = state.linkNumber
        var resends = state.writes.filter { $0.value.sentOnLink != link }.keys.map {
            (sequence: $0, resend: Resend.write($0))
        }
        for (path, put) in state.transactionPuts where put.sentOnLink != link {
            if state.link?.hello.supportsWriteIDs == true {
                resends.append((put.sequence, .transactionPut(path, put)))
            } else {
                forgetTransactionPut(at: path, in: &state)
            }
        }
        for (_, resend) in resends.sorted(by: { $0.sequence < $1.sequence }) {
            switch resend {
            case .write(let id):
                sendWrite(id, in: &state)
            case .transactionPut(let path, let put):
                if !sendTransactionPut(put, at: path, in: &state) { forgetTransactionPut(at: path, in: &state) }
            }
        }
    }

    /// The connection ended: `.info/connected` turns false (once), this client's own onDisconnect
    /// writes are applied locally as the server will apply them, and requests in flight are told.
    private func closed(_ link: any ServerLink) {
        let (answers, waiters) = state.withLock {
            state -> ([@Sendable (RequestOutcome) -> Void], [CheckedContinuation<Void, Never>]) in
            state.link = nil
            state.linkHost = nil
            state.lastAttemptFailed = true
            let waiters = takeConnectionWaiters(in: &state)
            guard state.connected else { return ([], waiters) }
            state.connected = false
            markUnsynced(in: &state)
            var events = state.info.applyServerOverwrite(Node(.bool(false)), at: Self.connectedPath)
            let now = serverTime(state)
            for operation in state.localDisconnects {
                let context = ServerValueContext(now: now)
                do {
                    if operation.isUpdate, case .object(let members) = operation.json {
                        var children: [Path: Node] = [:]
                        for (key, value) in members {
                            let relative = Path(key)
                            let absolute = operation.path.child(relative)
                            children[relative] = try Node(
                                json: value, at: absolute, existing: state.tree.completeEventCache(at: absolute),
                                serverValues: context)
                        }
                        events += state.tree.applyServerMerge(children, at: operation.path)
                    } else {
                        let node = try Node(
                            json: operation.json, at: operation.path,
                            existing: state.tree.completeEventCache(at: operation.path), serverValues: context)
                        events += state.tree.applyServerOverwrite(node, at: operation.path)
                    }
                } catch {
                    logger.warning("could not apply an onDisconnect write locally", metadata: ["error": "\(error)"])
                }
            }
            state.localDisconnects = []
            dispatch(events, in: &state)
            defer { state.requests = [:] }
            return (Array(state.requests.values), waiters)
        }
        for waiter in waiters { waiter.resume() }
        for answer in answers { answer(.disconnected) }
        logger.debug("disconnected")
    }

    // MARK: Messages

    /// One message from the server. A message the client cannot apply is logged and the
    /// connection reset; the app never sees it.
    private func handle(_ message: ServerMessage) {
        switch message {
        case .response(let number, let status, let data):
            let answer = state.withLock { $0.requests.removeValue(forKey: number) }
            answer?(.answered(status, data))
        case .overwrite(let pathText, let data, let tag):
            apply(pathText, reset: "a data push") { state, path in
                let node = try Node(json: data)
                if let tag {
                    if let query = Self.query(tagged: tag, in: state) {
                        let window = path == query.path
                        let children =
                            window ? node.children.map { (Path($0.key.string), $0.value) } : [(Path.root, node)]
                        persistence?.serverUpdate(
                            for: query, Dictionary(children, uniquingKeysWith: { $1 }), at: path, replacesWindow: window
                        )
                        if window { listenAnswered(Self.listenKey(query), in: &state) }
                    }
                    return state.tree.applyTaggedOverwrite(node, at: path, tag: tag)
                }
                persistence?.serverOverwrite(node, at: path)
                listenAnswered(Self.listenKey(QuerySpec(path: path)), in: &state)
                return state.tree.applyServerOverwrite(node, at: path)
            }
        case .merge(let pathText, let data, let tag):
            apply(pathText, reset: "a merge push") { state, path in
                guard case .object(let members) = data else { throw TreeError.invalidJSON(reason: "merge data") }
                var children: [Path: Node] = [:]
                for (key, value) in members { children[try Path(validating: key)] = try Node(json: value) }
                if let tag {
                    if let query = Self.query(tagged: tag, in: state) {
                        persistence?.serverUpdate(for: query, children, at: path, replacesWindow: false)
                    }
                    return state.tree.applyTaggedMerge(children, at: path, tag: tag)
                }
                persistence?.serverMerge(children, at: path)
                return state.tree.applyServerMerge(children, at: path)
            }
        case .listenRevoked(let pathText, let query):
            state.withLock { state in
                let params = (try? QueryParams(wireObject: query)) ?? .default
                let spec = QuerySpec(path: Path(pathText), params: params)
                let key = Self.listenKey(spec)
                state.listens[key] = nil
                state.listenOrder.removeAll { $0 == key }
                let events = state.tree.listenCompleted(spec, status: ResponseStatus.permissionDenied.text)
                sendListenRequests(in: &state)
                dispatch(events, in: &state)
            }
        case .authRevoked(let status, let reason):
            logger.warning(
                "the server revoked this client's credential", metadata: ["status": "\(status)", "reason": "\(reason)"])
            authRevoked(status: status.text, reason: reason)
        case .reset(let host):
            guard let redirect = endpoint.redirected(to: host) else {
                logger.warning("the server asked to reconnect to an invalid host", metadata: ["host": "\(host)"])
                state.withLock { $0.link?.close() }
                return
            }
            logger.info("the server asked to reconnect elsewhere", metadata: ["host": "\(host)"])
            state.withLock { state in
                state.redirect = redirect
                state.reconnectAtOnce = true
                state.link?.close()
            }
        case .shutdown(let reason):
            logger.error("the server shut this client out; not reconnecting", metadata: ["reason": "\(reason)"])
            interrupt()
        case .error(let text):
            logger.warning("the server reported an error", metadata: ["error": "\(text)"])
        case .ping:
            state.withLock { _ = $0.link?.send(.pong) }
        case .pong, .hello:
            break
        }
    }

    /// The filtered query whose pushes carry `tag`.
    private static func query(tagged tag: Int, in state: State) -> QuerySpec? {
        state.listens.values.first { $0.tag == tag }?.query
    }

    private func apply(
        _ pathText: String, reset what: String, _ body: (inout State, Path) throws -> [Event]
    ) {
        state.withLock { state in
            do {
                let path = try Path(validating: pathText)
                let events = try body(&state, path)
                dispatch(events, in: &state)
            } catch {
                logger.error(
                    "could not apply \(what) from the server; resetting the connection",
                    metadata: ["path": "\(pathText)", "error": "\(error)"])
                state.link?.close()
            }
        }
    }

    // MARK: Waiting for a connection

    /// Whether the client is connected, known to be offline, or still finding out.
    enum Reachability {
        case connected
        /// `goOffline()` holds, the last connection attempt failed or the connection was lost.
        case offline
        /// The first attempt of a run (or the one `goOnline()` started) has not ended yet.
        case connecting
    }

    func reachability(_ state: State) -> Reachability {
        if state.interrupted { return .offline }
        if state.connected { return .connected }
        return state.lastAttemptFailed ? .offline : .connecting
    }

    /// The waiters of ``waitUntilReachabilityKnown(timeout:)``, to be resumed: the connection opened,
    /// an attempt failed, the connection was lost or `goOffline()` was called.
    func takeConnectionWaiters(in state: inout State) -> [CheckedContinuation<Void, Never>] {
        defer { state.connectionWaiters = [:] }
        return Array(state.connectionWaiters.values)
    }

    /// Returns once connected or known to be offline (see ``Reachability``), or after `timeout`,
    /// whichever comes first.
    func waitUntilReachabilityKnown(timeout: Duration) async {
        let id = UUID()
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if reachability(state) != .connecting { return true }
                state.connectionWaiters[id] = waiter
                return false
            }
            if ready {
                waiter.resume()
                return
            }
            Task { [self] in
                try? await Task.sleep(for: timeout)
                state.withLock { $0.connectionWaiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
