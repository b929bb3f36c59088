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
/// use (`canopy-load slow-readers`: 660 MB, against 43 MB before the stall). `malloc_trim(0)`
/// returns the free pages of every arena; it runs a moment after a burst of bytes held for slow
/// readers ended (``OutboundBudget``), on NIO's blocking thread pool. Elsewhere than glibc it does
/// nothing.
final class HeapTrimmer: Sendable {
    /// How long after the burst's end: the connections and streams closed in it let go of their
    /// buffers meanwhile.
    let delay: Duration
    private let scheduled = Atomic(false)
    private let logger: Logger

    init(delay: Duration = .seconds(1), logger: Logger) {
        self.delay = delay
        self.logger = logger
    }

    /// Trims after ``delay``, once for any number of calls meanwhile.
    func trimSoon() {
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        Task { [self] in
            try? await Task.sleep(for: delay)
            scheduled.store(false, ordering: .relaxed)
            try? await NIOThreadPool.singleton.runIfActive { self.trim() }
        }
    }

    /// Returns the free pages of every arena to the system now; says how much in the log.
    func trim() {
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
