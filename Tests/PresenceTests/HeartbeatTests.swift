import Presence
import Testing
import Tree

struct HeartbeatTests {
    /// Checks `heartbeat` on time from `start` to `end`, answering every ping while `answering`;
    /// returns when it said close.
    static func run(
        _ heartbeat: inout Heartbeat, from start: Duration, to end: Duration, answering: Bool
    ) -> Duration? {
        var time = start
        while time <= end {
            switch heartbeat.check(at: time) {
            case .close?: return time
            case .ping? where answering: heartbeat.heard(at: time)
            default: break
            }
            time += heartbeat.checkInterval
        }
        return nil
    }

    /// The example in ``Heartbeat``'s documentation, as written there.
    @Test func theDocumentedSequence() {
        var heartbeat = Heartbeat(interval: .seconds(20))
        #expect(heartbeat.checkInterval == .seconds(5))
        heartbeat.heard(at: .seconds(1))
        let actions = [20, 25, 30, 35, 40].map { heartbeat.check(at: .seconds($0)) }
        #expect(actions == [.ping, nil, nil, nil, .close])
    }

    @Test func aSilentPeerIsPingedThenClosedBeforeTwoIntervals() throws {
        var heartbeat = Heartbeat(interval: .seconds(1))
        // The connection's own start counts as heard.
        #expect(heartbeat.check(at: heartbeat.checkInterval) == nil)
        let closed = try #require(
            Self.run(&heartbeat, from: heartbeat.checkInterval * 2, to: .seconds(3), answering: false))
        #expect(closed > heartbeat.interval && closed <= heartbeat.detectionBound, "closed at \(closed)")
        #expect(heartbeat.detectionBound == .seconds(2))
    }

    @Test func aPeerThatAnswersStaysAndIsClosedOnceSilent() throws {
        var heartbeat = Heartbeat(interval: .seconds(1))
        let step = heartbeat.checkInterval
        #expect(Self.run(&heartbeat, from: step, to: .seconds(10), answering: true) == nil)
        // One silent interval is not enough to close; the second is.
        let closed = try #require(Self.run(&heartbeat, from: .seconds(10) + step, to: .seconds(13), answering: false))
        #expect(closed > .seconds(11) && closed <= .seconds(12), "closed at \(closed)")
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

/// The timed heartbeat, driven by injected times as the server drives it by its clock.
struct TimedHeartbeatTests {
    /// Checks `heartbeat` every check interval from `start` until it says close; returns when.
    static func closingTime(of heartbeat: inout Heartbeat, checkingFrom start: Duration) -> Duration? {
        var time = start
        while time < heartbeat.interval * 10 {
            if heartbeat.check(at: time) == .close { return time }
            time += heartbeat.checkInterval
        }
        return nil
    }

    @Test func aPeerWhoseLastFrameFollowsACheckIsClosedWithinTwoIntervals() throws {
        let interval = Duration.seconds(2)
        var heartbeat = Heartbeat(interval: interval)
        let lastFrame = heartbeat.checkInterval * 3 + .milliseconds(1)
        var time = heartbeat.checkInterval
        while time < lastFrame {
            #expect(heartbeat.check(at: time) != .close)
            time += heartbeat.checkInterval
        }
        heartbeat.heard(at: lastFrame)
        let closed = try #require(Self.closingTime(of: &heartbeat, checkingFrom: time))
        #expect(closed - lastFrame <= heartbeat.detectionBound, "closed \(closed - lastFrame) after the last frame")
        #expect(closed - lastFrame > interval, "closed after only \(closed - lastFrame) of silence")
    }

    @Test(arguments: [0, 1, 250, 499, 500, 501, 999])
    func detectionStaysWithinTheBoundWhereverTheLastFrameLands(offsetMilliseconds: Int) throws {
        var heartbeat = Heartbeat(interval: .seconds(2))
        let lastFrame = Duration.seconds(1) + .milliseconds(offsetMilliseconds)
        var time = heartbeat.checkInterval
        while time < lastFrame {
            _ = heartbeat.check(at: time)
            time += heartbeat.checkInterval
        }
        heartbeat.heard(at: lastFrame)
        let closed = try #require(Self.closingTime(of: &heartbeat, checkingFrom: time))
        #expect(closed - lastFrame <= heartbeat.detectionBound)
        #expect(closed - lastFrame > heartbeat.interval)
    }

    @Test func aLivePeerIsPingedOncePerIntervalAndNeverClosed() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        var pings: [Duration] = []
        for step in 1...40 {
            let time = heartbeat.checkInterval * step
            let action = heartbeat.check(at: time)
            #expect(action != .close, "closed a peer that answers every ping at \(time)")
            if action == .ping {
                pings.append(time)
                heartbeat.heard(at: time + .milliseconds(100))
            }
        }
        #expect(pings == (1...10).map { Duration.seconds($0) })
    }

    @Test func aCheckThatRunsLateDoesNotCloseAndTheNextOnTimeDecides() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        for step in 1...4 { _ = heartbeat.check(at: heartbeat.checkInterval * step) }
        // The server did not run for 5 s: the peer's answers may still be unread.
        #expect(heartbeat.check(at: .seconds(6)) == .ping)
        heartbeat.heard(at: .milliseconds(6010))
        #expect(heartbeat.check(at: .milliseconds(6250)) == nil)
        // A peer still silent after the late check is closed by the next one on time.
        var silent = Heartbeat(interval: .seconds(1))
        for step in 1...4 { _ = silent.check(at: silent.checkInterval * step) }
        #expect(silent.check(at: .seconds(6)) == .ping)
        #expect(silent.check(at: .milliseconds(6250)) == .close)
    }

    @Test func aServerThatStaysOverloadedStillClosesASilentPeer() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        for step in 1...4 { _ = heartbeat.check(at: heartbeat.checkInterval * step) }
        // Every check comes a whole second late: only the first of them is forgiven.
        #expect(heartbeat.check(at: .seconds(3)) == .ping)
        #expect(heartbeat.check(at: .seconds(4)) == .close)
        // A peer heard meanwhile stays, and forgiving starts again after an on-time check.
        var live = Heartbeat(interval: .seconds(1))
        for step in 1...4 { _ = live.check(at: live.checkInterval * step) }
        #expect(live.check(at: .seconds(3)) == .ping)
        live.heard(at: .milliseconds(3100))
        #expect(live.check(at: .seconds(4)) == .ping)
        #expect(live.check(at: .milliseconds(4250)) == nil)
        #expect(live.check(at: .milliseconds(5500)) == .ping)
    }

    @Test func aFrameReportedLateDoesNotMoveTheLastFrameBack() {
        var heartbeat = Heartbeat(interval: .seconds(1))
        heartbeat.heard(at: .milliseconds(900))
        heartbeat.heard(at: .milliseconds(100))
        #expect(heartbeat.check(at: .milliseconds(2500)) != .close)
        #expect(heartbeat.check(at: .milliseconds(2650)) == .close)
    }
}
