import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress line on stderr, redrawn at most ten times a second: bytes, rate and, when the
/// total is known, a bar, the percentage and the time left. Silent when stderr is not a
/// terminal, so logs and pipes get no escape codes.
final class Progress {
    private let label: String
    private let total: Int?
    let isEnabled: Bool
    private let started = ContinuousClock.now
    private var lastDrawn: ContinuousClock.Instant?
    private(set) var done = 0

    init(_ label: String, total: Int?, enabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.total = total
        self.isEnabled = enabled
    }

    /// Seconds since the progress started.
    var elapsed: Double {
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Records that `done` bytes are done, redrawing if the last drawing is old enough.
    func update(_ done: Int) {
        self.done = done
        guard isEnabled else { return }
        let now = ContinuousClock.now
        if let lastDrawn, now - lastDrawn < .milliseconds(100) { return }
        lastDrawn = now
        draw()
    }

    /// Clears the line and, on a terminal, prints `summary` in its place.
    func finish(_ summary: String?) {
        guard isEnabled else { return }
        OutputFile.printError("\r\u{1B}[2K" + (summary ?? ""), prefixed: false)
    }

    /// The rate so far, such as `12.3 MB/s`.
    var rate: String {
        let seconds = max(elapsed, 0.001)
        return "\(ByteCount(Double(done) / seconds))/s"
    }

    private func draw() {
        var line = "\(label)  \(ByteCount(done))"
        if let total, total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let width = 24
            let filled = Int(fraction * Double(width))
            line += " / \(ByteCount(total))  [" + String(repeating: "#", count: filled)
            line += String(repeating: " ", count: width - filled) + "] " + String(format: "%3.0f%%", fraction * 100)
            line += "  \(rate)"
            let seconds = elapsed
            if done > 0, fraction < 1 {
                let left = seconds / fraction - seconds
                line += "  ETA " + Self.duration(left)
            }
        } else {
            line += "  \(rate)"
        }
        var text = "\r\u{1B}[2K" + line
        text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        if total < 3600 { return String(format: "%dm%02ds", total / 60, total % 60) }
        return String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
    }
}
