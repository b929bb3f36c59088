import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file (or stdin) opened for reading, read with plain `read(2)` calls.
final class InputFile {
    let descriptor: Int32
    /// How the input is named in messages: the file's path, or "stdin".
    let name: String
    /// The file's size in bytes, when it is a regular file.
    let size: Int?
    private let ownsDescriptor: Bool

    /// Opens `path`; `-` is stdin.
    init(path: String) throws(CLIError) {
        if path == "-" {
            descriptor = STDIN_FILENO
            name = "stdin"
            ownsDescriptor = false
        } else {
            let opened = open(path, O_RDONLY)
            guard opened >= 0 else {
                throw .unreadableInput("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            descriptor = opened
            name = path
            ownsDescriptor = true
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
            size = Int(status.st_size)
        } else {
            size = nil
        }
        if (status.st_mode & S_IFMT) == S_IFDIR {
            if ownsDescriptor { close(descriptor) }
            throw .unreadableInput("cannot read \(path): it is a folder")
        }
    }

    deinit {
        if ownsDescriptor { close(descriptor) }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the input.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(CLIError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        while true {
            let count = Foundation.read(descriptor, base, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw .unreadableInput("cannot read \(name): \(String(cString: strerror(errno)))")
        }
    }

    /// The whole input, at most `limit` bytes; `nil` when it is longer.
    func readAll(limit: Int) throws(CLIError) -> [UInt8]? {
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
        defer { chunk.deallocate() }
        while true {
            let count = try read(into: chunk)
            if count == 0 { return bytes }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            if bytes.count > limit { return nil }
        }
    }
}
