#if canImport(Network)
import Dispatch
import Network

/// The network path as Network framework's `NWPathMonitor` sees it: satisfied when the path's
/// status is `.satisfied`, unsatisfied otherwise (`.requiresConnection` included). Each watch runs
/// a monitor of its own, cancelled when the watch stops. The default
/// ``Database/networkPathMonitor`` on Apple platforms.
public struct NWNetworkPathMonitor: NetworkPathMonitor {
    private static let queue = DispatchQueue(label: "canopy.network-path")

    public init() {}

    public func pathUpdates() -> AsyncStream<NetworkPathStatus> {
        AsyncStream { continuation in
            let monitor = NWPathMonitor()
            monitor.pathUpdateHandler = { path in
                continuation.yield(path.status == .satisfied ? .satisfied : .unsatisfied)
            }
            continuation.onTermination = { _ in monitor.cancel() }
            monitor.start(queue: Self.queue)
        }
    }
}
#endif
