import Foundation

/// A byte count as people read it: `512 B`, `3.2 KB`, `104.9 MB`, `1.07 GB` (powers of 1000).
struct ByteCount: CustomStringConvertible {
    let bytes: Double

    init(_ bytes: Int) { self.bytes = Double(bytes) }

    init(_ bytes: Double) { self.bytes = bytes }

    var description: String {
        switch bytes {
        case ..<1000: String(format: "%.0f B", bytes)
        case ..<1_000_000: String(format: "%.1f KB", bytes / 1e3)
        case ..<1_000_000_000: String(format: "%.1f MB", bytes / 1e6)
        default: String(format: "%.2f GB", bytes / 1e9)
        }
    }
}
