/// Whether the device has a network path it can send data on.
public enum NetworkPathStatus: Sendable, Equatable {
    /// A usable network is up: a connection to the server may work.
    case satisfied
    /// No usable network: connections to other hosts cannot work until the path comes back.
    case unsatisfied
}

/// Tells a ``Database`` when the device's network path comes and goes, as Firebase's SDK learns it
/// from the system, so the SDK does not wait out its reconnect backoff when the network is back.
///
/// When the path becomes satisfied while the client is disconnected, it reconnects at once and
/// its backoff starts over; when the path goes away while it is connected to a host other than
/// loopback, it drops that connection at once (`.info/connected` turns false) instead of waiting
/// for TCP to give up. The first status a monitor reports is taken as the starting point and
/// changes nothing. The SDK never waits for a monitor's permission to connect: it keeps trying on
/// its backoff whatever the monitor says.
///
/// ``Database/networkPathMonitor`` is `NWNetworkPathMonitor` (Network framework) on Apple platforms
/// and `NetlinkNetworkPathMonitor` (the kernel's routing socket) on Linux. An app may give its
/// own, for example one fed by the reachability code it already has:
///
/// ```swift
/// final class AppReachability: NetworkPathMonitor {
///     private let watches = Mutex<[AsyncStream<NetworkPathStatus>.Continuation]>([])
///
///     func pathUpdates() -> AsyncStream<NetworkPathStatus> {
///         let (stream, continuation) = AsyncStream.makeStream(of: NetworkPathStatus.self)
///         continuation.yield(.satisfied)
///         watches.withLock { $0.append(continuation) }
///         return stream
///     }
///
///     func reachabilityChanged(reachable: Bool) {
///         // Yield outside the lock: a yield may resume a task whose cancellation waits for it.
///         for watch in watches.withLock({ $0 }) { watch.yield(reachable ? .satisfied : .unsatisfied) }
///     }
/// }
/// database.networkPathMonitor = AppReachability()
/// ```
public protocol NetworkPathMonitor: Sendable {
    /// Starts watching: the stream yields the current status, then every change, until the task
    /// iterating it is cancelled, which stops the watch. Each call starts a watch of its own.
    func pathUpdates() -> AsyncStream<NetworkPathStatus>
}
