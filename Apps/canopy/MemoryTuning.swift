#if canImport(Glibc)
import Glibc
#endif

/// Process-wide memory settings for flat memory use.
enum MemoryTuning {
    /// Has glibc give buffers of 128 KB and more (request bodies, answers, long strings) back to
    /// the system when they are freed. By default glibc raises this threshold to the size of the
    /// first such buffer freed and keeps later ones in its heap, so an import's resident memory
    /// would grow to a few times the chunk size. (`mallopt` is looked up at run time: the Glibc
    /// module does not import `malloc.h`.)
    static func returnLargeBuffersToTheSystem() {
        #if canImport(Glibc)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
        _ = mallopt(mmapThreshold, 128 * 1024)
        #endif
    }
}
