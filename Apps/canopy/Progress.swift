import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress line on stderr, redrawn at most ten times a second: bytes, rate and, when the
/// total is known, a bar, the percentage and the time left. Silent when stderr is not a
/// terminal, so logs and pipes get no escape codes.
///
/// When the total in bytes is not known but the work is a known number of parts (an export's
/// top-level children), the bar, percentage and time left follow the parts done instead: an
/// estimate that takes the parts to be of the same size.
final class Progress {
    private let label: String
    private let total: Int?
    let isEnabled: Bool
    private let started = ContinuousClock.now
    private var lastDrawn: ContinuousClock.Instant?
    private(set) var done = 0
    /// The parts of the work, when their number is known (see ``expect(parts:named:)``).
    private var parts: (done: Int, total: Int, name: String)?

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

    /// Says that the work is `total` parts, such as `children`, without a total in bytes: the
    /// fraction done is then the parts done (see ``completed(parts:)``) over `total`.
    func expect(parts total: Int, named name: String) {
        parts = (0, total, name)
    }

    /// Records that `done` parts are done (when ``expect(parts:named:)`` was called); drawn with
    /// the next ``update(_:)``.
    func completed(parts done: Int) {
        parts?.done = done
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
        let fraction: Double?
        if let total, total > 0 {
            line += " / \(ByteCount(total))"
            fraction = min(1, Double(done) / Double(total))
        } else if let parts, parts.total > 0 {
            line += "  \(parts.done) / \(parts.total) \(parts.name)"
            fraction = min(1, Double(parts.done) / Double(parts.total))
        } else {
            fraction = nil
        }
        if let fraction {
            let width = 24
            let filled = Int(fraction * Double(width))
            line += "  [" + String(repeating: "#", count: filled)
            line += String(repeating: " ", count: width - filled) + "] " + String(format: "%3.0f%%", fraction * 100)
        }
        line += "  \(rate)"
        if let fraction, fraction > 0, fraction < 1 {
            let seconds = elapsed
            line += "  ETA " + Self.duration(seconds / fraction - seconds)
        }
        var text = "\r\u{1B}[2K" + line
        text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    /// How long a finished transfer took: tenths of a second under ten seconds (`0.2s`, `4.7s`),
    /// where whole seconds would print a quick import as `0s`; then as ``duration(_:)``.
    static func elapsed(_ seconds: Double) -> String {
        seconds < 9.95 ? String(format: "%.1fs", seconds) : duration(seconds)
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        if total < 3600 { return String(format: "%dm%02ds", total / 60, total % 60) }
        return String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
    }
}
