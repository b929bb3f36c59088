import Presence
import Testing
import Tree

struct HeartbeatTests {
    @Test func aSilentPeerIsClosedOnTheSecondSilentBeat() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        // The first beat follows the connection's own start, which counts as heard.
        #expect(heartbeat.beat() == .ping)
        #expect(heartbeat.beat() == .ping)
        #expect(heartbeat.beat() == .close)
        #expect(heartbeat.detectionBound == .seconds(2))
    }

    @Test func anyFrameBetweenBeatsKeepsThePeerAlive() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        for _ in 0..<10 {
            #expect(heartbeat.beat() == .ping)
            heartbeat.heard()
        }
        // One silent interval is not enough to close; the second is.
        #expect(heartbeat.beat() == .ping)
        #expect(heartbeat.beat() == .ping)
        heartbeat.heard()
        #expect(heartbeat.beat() == .ping)
        #expect(heartbeat.beat() == .ping)
        #expect(heartbeat.beat() == .close)
    }
}

struct DisconnectOperationsTests {
    @Test func operationsRunInRegistrationOrderAndCancelByPathPrefix() {
        var operations = DisconnectOperations()
        operations.register(DisconnectOperation(path: "users/ada/status", kind: .set("offline")))
        operations.register(DisconnectOperation(path: "rooms/1/members/ada", kind: .set(nil)))
        operations.register(DisconnectOperation(path: "users/ada/lastSeen", kind: .set(1)))
        operations.cancel(below: "rooms")
        let taken = operations.takeAll()
        #expect(taken.map(\.path) == ["users/ada/status", "users/ada/lastSeen"])
        #expect(operations.isEmpty)
        #expect(operations.takeAll().isEmpty)
    }
}
