import Histogram
import NIOCore
import NIOPosix

/// Latency histograms, one per event loop of the group: sessions record into their own loop's
/// without a lock, and 10,000 sessions do not each hold a histogram (about 220 KB apiece at this
/// range and precision).
final class LoopHistograms: Sendable {
    private let histograms: [ObjectIdentifier: NIOLoopBoundBox<Histogram<UInt64>>]

    init(group: MultiThreadedEventLoopGroup = .singleton) {
        var histograms: [ObjectIdentifier: NIOLoopBoundBox<Histogram<UInt64>>] = [:]
        for loop in group.makeIterator() {
            histograms[ObjectIdentifier(loop)] = NIOLoopBoundBox.makeBoxSendingValue(makeHistogram(), eventLoop: loop)
        }
        self.histograms = histograms
    }

    /// Records `value` in the calling event loop's histogram; does nothing off the group's loops.
    func record(_ value: UInt64) {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop,
            let box = histograms[ObjectIdentifier(loop)]
        else { return }
        _ = box.value.record(value)
    }

    /// All loops' histograms added up, each read on its own loop.
    func merged() async throws -> Histogram<UInt64> {
        var total = makeHistogram()
        for box in histograms.values {
            total.add(try await box.eventLoop.submit { box.value }.get())
        }
        return total
    }
}
