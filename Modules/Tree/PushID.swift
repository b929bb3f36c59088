import Synchronization

/// Generates push ids: 20 characters of `-0-9A-Z_a-z` whose ASCII order is creation order.
///
/// Eight characters encode the millisecond timestamp, twelve are random; ids made in the same
/// millisecond (or while the clock runs backwards) increment the previous random part instead, so
/// one generator's ids are strictly increasing. Safe to share across tasks.
///
/// ```swift
/// let ids = PushIDGenerator()
/// let id = ids.next(now: 1_700_000_000_000)   // "-NjC…" (20 characters)
/// ```
public final class PushIDGenerator: Sendable {
    /// The alphabet, in ASCII order.
    public static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    private struct State {
        var lastTime: Int64 = -1
        var lastRandom = [Int](repeating: 0, count: 12)
    }

    private let state = Mutex(State())

    public init() {}

    /// The next id for time `now` (milliseconds since 1970, on the server's clock or an estimate of it).
    public func next(now: Int64) -> String {
        let (time, random) = state.withLock { state -> (Int64, [Int]) in
            if now > state.lastTime {
                state.lastTime = now
                for index in 0..<12 { state.lastRandom[index] = Int.random(in: 0..<64) }
            } else {
                var index = 11
                while index >= 0, state.lastRandom[index] == 63 {
                    state.lastRandom[index] = 0
                    index -= 1
                }
                if index >= 0 {
                    state.lastRandom[index] += 1
                } else {
                    // All 2^72 ids of this millisecond are used: borrow the next millisecond.
                    state.lastTime += 1
                }
            }
            return (state.lastTime, state.lastRandom)
        }
        var bytes = [UInt8](repeating: 0, count: 20)
        var remaining = time
        for index in stride(from: 7, through: 0, by: -1) {
            bytes[index] = Self.alphabet[Int(remaining % 64)]
            remaining /= 64
        }
        for index in 0..<12 { bytes[8 + index] = Self.alphabet[random[index]] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The creation time (ms since 1970) encoded in a push id, or `nil` if `id` is not one.
    public static func timestamp(of id: String) -> Int64? {
        let bytes = Array(id.utf8)
        guard bytes.count == 20 else { return nil }
        var time: Int64 = 0
        for byte in bytes[0..<8] {
            guard let digit = alphabet.firstIndex(of: byte) else { return nil }
            time = time * 64 + Int64(digit)
        }
        return time
    }
}
