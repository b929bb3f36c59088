/// The delay before each reconnect attempt, as the official clients compute it: a base delay `d`
/// that starts at ``minimum`` and grows ×``multiplier`` per failed attempt up to ``maximum``,
/// jittered to `0.3·d + 0.7·d·random`, and back to ``minimum`` once a connection stayed up for
/// ``resetAfter``.
///
/// ```swift
/// var backoff = ReconnectBackoff()
/// backoff.nextDelay(random: 1)     // 1 s   (d = 1 s, then 1.3 s)
/// backoff.nextDelay(random: 0)     // 0.39 s (0.3 · 1.3 s)
/// backoff.connectionLasted(.seconds(45))
/// backoff.nextDelay(random: 1)     // 1 s again
/// ```
///
/// Delays are whole milliseconds, so equal inputs give equal delays.
public struct ReconnectBackoff: Sendable {
    /// The first base delay, and the one a long enough connection resets to.
    public let minimum: Duration
    /// The largest base delay.
    public let maximum: Duration
    /// How much the base delay grows after each attempt.
    public let multiplier: Double
    /// How long a connection must last for the delay to reset to ``minimum``.
    public let resetAfter: Duration
    /// The base delay `d` of the next attempt, in seconds.
    private var base: Double

    /// A policy with the official clients' numbers unless told otherwise. A `maximum` below
    /// `minimum` is raised to it; a `multiplier` below 1 is taken as 1.
    public init(
        minimum: Duration = .seconds(1), maximum: Duration = .seconds(30), multiplier: Double = 1.3,
        resetAfter: Duration = .seconds(30)
    ) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        self.multiplier = max(1, multiplier)
        self.resetAfter = resetAfter
        self.base = Self.seconds(minimum)
    }

    /// The base delay `d` the next attempt is jittered from.
    public var currentBase: Duration { Self.duration(base) }

    /// The delay before the next attempt, given `random` in `0..<1` (values outside are clamped):
    /// `0.3·d + 0.7·d·random`; then `d` grows ×``multiplier``, up to ``maximum``.
    ///
    /// ```swift
    /// var backoff = ReconnectBackoff()
    /// backoff.nextDelay(random: 0.5)   // 0.65 s
    /// ```
    public mutating func nextDelay(random: Double) -> Duration {
        let random = random.isNaN ? 0 : min(1, max(0, random))
        let delay = 0.3 * base + 0.7 * base * random
        base = min(Self.seconds(maximum), base * multiplier)
        return Self.duration(delay)
    }

    /// The delay before the next attempt, jittered with the system random generator.
    public mutating func nextDelay() -> Duration {
        nextDelay(random: Double.random(in: 0..<1))
    }

    /// Tells how long the last connection stayed up: at or beyond ``resetAfter`` the base delay
    /// goes back to ``minimum``; a shorter one changes nothing (it counts as a failure).
    public mutating func connectionLasted(_ duration: Duration) {
        if duration >= resetAfter { reset() }
    }

    /// Sets the base delay back to ``minimum``.
    public mutating func reset() {
        base = Self.seconds(minimum)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    private static func duration(_ seconds: Double) -> Duration {
        .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
