#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a `/proc` file whole with read(2): its files have no size, which readers that go by
/// the size (Foundation's among them) take for empty.
enum ProcFile {
    struct Unreadable: Error {}

    static func contents(of path: String) throws(Unreadable) -> String {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw Unreadable() }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count >= 0 else { throw Unreadable() }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
