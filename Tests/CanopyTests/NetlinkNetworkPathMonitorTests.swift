#if os(Linux)
import CanopyTesting
import Testing

@testable import Canopy

/// Linux's network path monitor: the kernel's netlink route socket, read on a thread of its own.
@Suite(.timeLimit(.minutes(2)))
struct NetlinkNetworkPathMonitorTests {
    @Test func aWatchReportsThePathNowAndItsThreadEndsWithTheWatch() async throws {
        let monitor = NetlinkNetworkPathMonitor()
        let now = NetworkPathStatus(try #require(InterfaceAddress.current()))
        let statuses = Recorder<NetworkPathStatus>()
        let watch = Task { for await status in monitor.pathUpdates() { statuses.record(status) } }
        #expect(await statuses.wait { !$0.isEmpty })
        #expect(statuses.all.first == now, "\(statuses.all), interfaces: \(InterfaceAddress.current() ?? [])")
        #expect(monitor.runningThreads == 1)
        watch.cancel()
        await watch.value
        #expect(await eventually { monitor.runningThreads == 0 })
    }

    /// In a network namespace of its own, the watch sees the namespace's only link lose its
    /// carrier and get it back.
    @Test(.enabled(if: NetworkNamespace.isAvailable, "needs root and iproute2"))
    func aWatchFollowsALinkGoingDownAndUp() async throws {
        let network = try await NetworkNamespace.create()
        do {
            let monitor = NetlinkNetworkPathMonitor()
            let inside = try await network.onThreadInside { InterfaceAddress.current() ?? [] }
            #expect(inside.contains { $0.carriesTraffic }, "\(inside)")
            let updates = try await network.onThreadInside { monitor.pathUpdates() }
            let statuses = Recorder<NetworkPathStatus>()
            let watch = Task { for await status in updates { statuses.record(status) } }
            #expect(await statuses.wait { $0.last == .satisfied }, "\(statuses.all)")
            try await network.cut()
            #expect(await statuses.wait { $0.last == .unsatisfied }, "\(statuses.all)")
            try await network.heal()
            #expect(await statuses.wait { $0.last == .satisfied }, "\(statuses.all)")
            watch.cancel()
            await watch.value
            #expect(await eventually { monitor.runningThreads == 0 })
        } catch {
            await network.remove()
            throw error
        }
        await network.remove()
    }

    @Test func aPathNeedsARoutableAddressOnALinkThatIsUpAndRunning() {
        func address(
            _ interface: String, up: Bool = true, running: Bool = true, loopback: Bool = false,
            _ kind: InterfaceAddress.Kind
        ) -> InterfaceAddress {
            InterfaceAddress(interface: interface, isUp: up, isRunning: running, isLoopback: loopback, kind: kind)
        }
        let loopback = address("lo", loopback: true, .routable)
        #expect(NetworkPathStatus([]) == .unsatisfied)
        #expect(NetworkPathStatus([loopback]) == .unsatisfied)
        #expect(NetworkPathStatus([loopback, address("eth0", .linkLocal), address("eth0", .other)]) == .unsatisfied)
        #expect(NetworkPathStatus([loopback, address("eth0", running: false, .routable)]) == .unsatisfied)
        #expect(NetworkPathStatus([loopback, address("eth0", up: false, .routable)]) == .unsatisfied)
        #expect(NetworkPathStatus([loopback, address("eth0", .linkLocal), address("eth0", .routable)]) == .satisfied)
    }
}
#endif
