import Logging
import Synchronization

extension Repo {
    /// Follows the ``NetworkPathMonitor`` until the task is cancelled (the database is released)
    /// or the monitor's stream ends.
    func watchNetworkPath() async {
        guard let networkPathMonitor else { return }
        for await status in networkPathMonitor.pathUpdates() {
            networkPathChanged(to: status)
        }
    }

    /// The first status is where the path starts from; a change acts. Back while disconnected: the
    /// reconnect wait ends at once (after `goOffline()`, the next `goOnline()` finds the backoff
    /// reset). Gone while connected to a host other than loopback: the connection is dropped, since
    /// nothing can cross it any more and TCP would take minutes to say so.
    func networkPathChanged(to status: NetworkPathStatus) {
        let dropped = state.withLock { state -> (any ServerLink)? in
            let previous = state.networkPath
            state.networkPath = status
            guard let previous, previous != status else { return nil }
            switch status {
            case .satisfied:
                guard !state.connected else { return nil }
                state.networkPathReturned = true
                if !state.interrupted { state.reconnectWait?.cancel() }
                return nil
            case .unsatisfied:
                guard let link = state.link, let host = state.linkHost, !Self.isLoopback(host: host) else { return nil }
                return link
            }
        }
        logger.debug("the network path changed", metadata: ["status": "\(status)"])
        dropped?.close()
    }

    /// Whether `host` names this machine (`localhost`, `127.x.x.x`, `::1`): a connection to it does
    /// not depend on the network path.
    static func isLoopback(host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
