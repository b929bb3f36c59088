import NIOCore
import NIOPosix
import Testing

@testable import CanopyTesting

/// Ports reserved for servers whose port must be known before they start lie below the system's
/// ephemeral range, so that no test's outgoing connection takes one before its server binds it.
struct ReservedPortTests {
    @Test func reservedPortsAreFreeDistinctAndOutsideTheEphemeralRange() throws {
        let ephemeral = TestServer.ephemeralPortRange()
        var ports: Set<Int> = []
        for _ in 0..<50 {
            let port = try TestServer.reservePort()
            #expect(!ephemeral.contains(port), "\(port) is in the ephemeral range \(ephemeral)")
            #expect(ports.insert(port).inserted, "\(port) was reserved twice")
        }
        // Each can still be listened on.
        for port in ports.prefix(5) {
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
            let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(to: address).wait()
            #expect(channel.localAddress?.port == port)
            try channel.close().wait()
        }
    }

    /// A system whose ephemeral range starts low leaves nothing below it: reservations fall back to
    /// a port the system picks, instead of a range that cannot be formed.
    @Test func anEphemeralRangeStartingLowLeavesNoCandidates() {
        #expect(TestServer.candidatePorts(below: 1024...65_535).isEmpty)
        #expect(TestServer.candidatePorts(below: 10_000...65_535).isEmpty)
        #expect(TestServer.candidatePorts(below: 32_768...60_999) == 10_000..<26_384)
        #expect(TestServer.candidatePorts(below: 12_000...60_999) == 10_000..<12_000)
    }
}
