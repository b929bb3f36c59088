import RealtimeClientSocket
import Testing

struct ReconnectBackoffTests {
    @Test func startsAtOneSecondAndGrowsByOnePointThree() {
        var backoff = ReconnectBackoff()
        // random 1 gives the base delay itself: 1, 1.3, 1.69, 2.197, 2.8561 s (to the millisecond).
        let delays = (0..<5).map { _ in backoff.nextDelay(random: 1) }
        #expect(delays == [1000, 1300, 1690, 2197, 2856].map { Duration.milliseconds($0) })
    }

    @Test func jitterStaysBetweenThirtyAndOneHundredPercentOfTheBase() {
        var low = ReconnectBackoff()
        var middle = ReconnectBackoff()
        var high = ReconnectBackoff()
        for _ in 0..<30 {
            let base = Self.milliseconds(low.currentBase)
            let lowest = Self.milliseconds(low.nextDelay(random: 0))
            let half = Self.milliseconds(middle.nextDelay(random: 0.5))
            let highest = Self.milliseconds(high.nextDelay(random: 0.999_999))
            #expect(abs(lowest - 0.3 * base) <= 1, "random 0 gives 30 % of the base \(base) ms")
            #expect(abs(half - 0.65 * base) <= 1, "random 0.5 gives 65 % of the base \(base) ms")
            #expect(lowest <= half && half <= highest && highest <= base)
        }
        var first = ReconnectBackoff()
        #expect(first.nextDelay(random: 0) == .milliseconds(300))
        #expect(first.nextDelay(random: 0.5) == .milliseconds(845), "0.3 · 1.3 s + 0.7 · 1.3 s · 0.5")
    }

    @Test func outOfRangeRandomnessIsClamped() {
        var below = ReconnectBackoff()
        var above = ReconnectBackoff()
        var notANumber = ReconnectBackoff()
        #expect(below.nextDelay(random: -3) == .milliseconds(300))
        #expect(above.nextDelay(random: 7) == .seconds(1))
        #expect(notANumber.nextDelay(random: .nan) == .milliseconds(300))
    }

    @Test func isCappedAtThirtySeconds() {
        var backoff = ReconnectBackoff()
        // 1.3^13 ≈ 30.3, so the fourteenth base would pass the cap.
        let delays = (0..<40).map { _ in backoff.nextDelay(random: 1) }
        #expect(delays[12] == .milliseconds(23_298))
        #expect(delays[13] == .seconds(30))
        #expect(delays.dropFirst(13).allSatisfy { $0 == .seconds(30) })
        #expect(delays.max() == .seconds(30))
        #expect(backoff.currentBase == .seconds(30))
    }

    @Test func resetsAfterAConnectionOfThirtySecondsOrMore() {
        var backoff = ReconnectBackoff()
        for _ in 0..<10 { _ = backoff.nextDelay(random: 1) }
        backoff.connectionLasted(.seconds(29))
        #expect(backoff.nextDelay(random: 1) == .milliseconds(13_786), "a short connection counts as a failure")
        backoff.connectionLasted(.seconds(30))
        #expect(backoff.nextDelay(random: 1) == .seconds(1))
        #expect(backoff.nextDelay(random: 1) == .milliseconds(1300))
        backoff.connectionLasted(.seconds(600))
        #expect(backoff.currentBase == .seconds(1))
    }

    @Test func customLimits() {
        var backoff = ReconnectBackoff(
            minimum: .milliseconds(100), maximum: .milliseconds(250), multiplier: 2, resetAfter: .seconds(5))
        let delays = (0..<4).map { _ in backoff.nextDelay(random: 1) }
        #expect(delays == [100, 200, 250, 250].map { Duration.milliseconds($0) })
        backoff.connectionLasted(.seconds(5))
        #expect(backoff.nextDelay(random: 0) == .milliseconds(30))
    }

    @Test func systemRandomDelaysStayWithinTheJitterBounds() {
        var backoff = ReconnectBackoff()
        for _ in 0..<50 {
            let base = Self.milliseconds(backoff.currentBase)
            let delay = Self.milliseconds(backoff.nextDelay())
            #expect(delay >= 0.3 * base - 1 && delay <= base)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
