#if os(Linux)
import Foundation
import Logging
import Synchronization

/// The network path as the Linux kernel reports it: a netlink route socket (`AF_NETLINK`,
/// subscribed to `RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR`) read on a thread of its
/// own. After each change the interfaces are read again (`getifaddrs`): the path is satisfied
/// while an interface other than loopback is up and running (has a carrier) with an IPv4 or IPv6
/// address that is not link-local. Routes are not looked at: an address on a network without a
/// default route counts, since the server may be on that network.
///
/// One thread serves every watch of an instance; it starts with the first and stops (closing its
/// socket) when the last ends. The default ``Database/networkPathMonitor`` on Linux is ``shared``.
/// Where the kernel refuses the socket (a sandbox without netlink), every watch ends at once and
/// the SDK reconnects on its backoff alone.
public final class NetlinkNetworkPathMonitor: NetworkPathMonitor {
    /// The instance databases use by default: one thread for the whole process.
    public static let shared = NetlinkNetworkPathMonitor()

    private struct State {
        var watches: [UUID: AsyncStream<NetworkPathStatus>.Continuation] = [:]
        var watcher: NetlinkWatcher?
        /// Counts watchers started, so a report from one already stopped is ignored.
        var generation = 0
        var status: NetworkPathStatus?
        var runningThreads = 0
    }

    private let state = Mutex(State())
    private let logger = Logger(label: "canopy.network-path")

    public init() {}

    public func pathUpdates() -> AsyncStream<NetworkPathStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkPathStatus.self)
        let id = UUID()
        continuation.onTermination = { [self] _ in endWatch(id) }
        let refused = state.withLock { state -> (NetlinkError, [AsyncStream<NetworkPathStatus>.Continuation])? in
            state.watches[id] = continuation
            // Nothing waits on the stream yet: this yield resumes no task.
            if let status = state.status { continuation.yield(status) }
            guard state.watcher == nil else { return nil }
            state.generation += 1
            let generation = state.generation
            do throws(NetlinkError) {
                state.watcher = try NetlinkWatcher.start(
                    report: { [weak self] status in self?.report(status, from: generation) },
                    ended: { [weak self] in self?.watcherEnded(generation) })
                state.runningThreads += 1
                return nil
            } catch {
                defer { state.watches = [:] }
                return (error, Array(state.watches.values))
            }
        }
        if let (error, watches) = refused {
            logger.warning("cannot watch the network path; reconnecting on the backoff alone: \(error)")
            for watch in watches { watch.finish() }
        }
        return stream
    }

    /// How many watcher threads have not ended yet (tests check that a stopped watch leaves none).
    var runningThreads: Int { state.withLock { $0.runningThreads } }

    /// Yields outside the lock: a yield may resume the watch's task, which takes that task's
    /// status lock, while a cancellation of the task holds it and calls ``endWatch(_:)`` (the two
    /// threads waited for each other in a test run). Reports come from the one watcher thread, so
    /// they stay in order.
    private func report(_ status: NetworkPathStatus, from generation: Int) {
        let watches = state.withLock { state -> [AsyncStream<NetworkPathStatus>.Continuation] in
            guard generation == state.generation, state.watcher != nil, status != state.status else { return [] }
            state.status = status
            return Array(state.watches.values)
        }
        for watch in watches { watch.yield(status) }
    }

    private func endWatch(_ id: UUID) {
        state.withLock { state in
            guard state.watches.removeValue(forKey: id) != nil, state.watches.isEmpty else { return }
            state.watcher?.stop()
            state.watcher = nil
            state.status = nil
        }
    }

    /// A watcher's thread ended: asked to, or because its socket failed, in which case the watches
    /// end too (nothing will report to them any more).
    private func watcherEnded(_ generation: Int) {
        let orphaned = state.withLock { state -> [AsyncStream<NetworkPathStatus>.Continuation] in
            state.runningThreads -= 1
            guard generation == state.generation, state.watcher != nil else { return [] }
            state.watcher = nil
            state.status = nil
            defer { state.watches = [:] }
            return Array(state.watches.values)
        }
        if !orphaned.isEmpty { logger.warning("the network path watch failed; reconnecting on the backoff alone") }
        for watch in orphaned { watch.finish() }
    }
}
#endif
