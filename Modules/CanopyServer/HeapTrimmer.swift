import Logging
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Gives the memory freed after a burst back to the system.
///
/// glibc's allocator keeps freed memory in its arenas (one per thread that allocates, up to eight
/// per core) for reuse, and returns little of it by itself. Once stalled readers had held hundreds
/// of megabytes and were closed, the server kept its peak resident memory with a few megabytes in
/// use (`canopy-load slow-readers`: 660 MB, against 43 MB before the stall); after an import, the
/// buffers of its request bodies stayed too (a tenth of the memory of 400,000 imported records).
/// `malloc_trim(0)` returns the free pages of every arena; it runs a moment after a burst ended, of
/// bytes held for slow readers (``OutboundBudget``) or of large writes, on NIO's blocking thread
/// pool. Elsewhere than glibc it does nothing.
final class HeapTrimmer: Sendable {
    /// How long after the burst's last call: the connections and streams closed in it let go of
    /// their buffers meanwhile, and a burst that goes on is not trimmed in the middle.
    let delay: Duration
    /// A request body this large or larger is a burst of its own (see ``trimSoon()``).
    static let largeBodyBytes = 1 << 20
    private let scheduled = Atomic(false)
    /// When ``trimSoon()`` was last called, in nanoseconds of `ContinuousClock` since `origin`.
    private let lastCall = Atomic<Int64>(0)
    private let origin = ContinuousClock.now
    private let trims = Atomic(0)
    private let logger: Logger

    init(delay: Duration = .seconds(1), logger: Logger) {
        self.delay = delay
        self.logger = logger
    }

    /// How many times it trimmed.
    var trimCount: Int { trims.load(ordering: .relaxed) }

    /// Trims once ``delay`` passed without another call: once for a burst of any length.
    func trimSoon() {
        lastCall.store(elapsed(), ordering: .relaxed)
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        Task { [self] in
            var wait = delay
            while true {
                try? await Task.sleep(for: wait)
                let quiet = Duration.nanoseconds(elapsed() - lastCall.load(ordering: .relaxed))
                if quiet >= delay { break }
                wait = delay - quiet
            }
            scheduled.store(false, ordering: .relaxed)
            try? await NIOThreadPool.singleton.runIfActive { self.trim() }
        }
    }

    private func elapsed() -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Returns the free pages of every arena to the system now; says how much in the log.
    func trim() {
        trims.add(1, ordering: .relaxed)
        #if canImport(Glibc)
        guard let mallocTrim = Self.mallocTrim else { return }
        let before = Self.residentBytes()
        let started = ContinuousClock.now
        _ = mallocTrim(0)
        let took = ContinuousClock.now - started
        let after = Self.residentBytes()
        logger.info(
            "gave memory freed after a burst back to the system",
            metadata: [
                "resident_mb_before": "\(before / 1_000_000)", "resident_mb_after": "\(after / 1_000_000)",
                "took": "\(took)",
            ])
        #endif
    }

    #if canImport(Glibc)
    /// glibc's `malloc_trim`, which its Swift module does not import (`malloc.h`); `nil` under
    /// another C library.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
    #endif

    /// This process's resident memory, from `/proc/self/statm` (0 where it cannot be read).
    static func residentBytes() -> Int {
        #if canImport(Glibc)
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 128)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        // "size resident shared text lib data dt", in pages.
        let fields = bytes[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }
}
