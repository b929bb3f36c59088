import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor written through a buffer (stdout, usually), counting the bytes written.
///
/// Not thread-safe: one task writes it. Errors (a closed pipe, a full disk) throw
/// ``CLIError/output(_:)``.
final class OutputFile {
    let descriptor: Int32
    private var buffer: [UInt8] = []
    private let capacity: Int
    /// Bytes handed to ``write(_:)-(UnsafeRawBufferPointer)`` so far.
    private(set) var count = 0

    init(descriptor: Int32 = STDOUT_FILENO, capacity: Int = 1 << 18) {
        self.descriptor = descriptor
        self.capacity = capacity
        buffer.reserveCapacity(capacity)
    }

    /// Whether the descriptor is a terminal.
    var isTerminal: Bool { isatty(descriptor) == 1 }

    func write(_ bytes: UnsafeRawBufferPointer) throws(CLIError) {
        count += bytes.count
        if buffer.count + bytes.count > capacity { try flush() }
        if bytes.count >= capacity {
            try Self.writeAll(bytes, to: descriptor)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    func write(_ text: String) throws(CLIError) {
        var text = text
        try text.withUTF8 { bytes in Result { () throws(CLIError) in try write(UnsafeRawBufferPointer(bytes)) } }.get()
    }

    func write(_ bytes: ByteBuffer) throws(CLIError) {
        try bytes.withUnsafeReadableBytes { raw in Result { () throws(CLIError) in try write(raw) } }.get()
    }

    func write(_ bytes: [UInt8]) throws(CLIError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(CLIError) in try write(raw) } }.get()
    }

    func write(byte: UInt8) throws(CLIError) {
        count += 1
        if buffer.count == capacity { try flush() }
        buffer.append(byte)
    }

    /// Writes out what is buffered.
    func flush() throws(CLIError) {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { raw in Result { () throws(CLIError) in try Self.writeAll(raw, to: descriptor) } }
            .get()
        buffer.removeAll(keepingCapacity: true)
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws(CLIError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let result = Foundation.write(descriptor, base + offset, bytes.count - offset)
            if result < 0 {
                if errno == EINTR { continue }
                throw .output("could not write the output: \(String(cString: strerror(errno)))")
            }
            offset += result
        }
    }

    /// Writes one line to stderr at once (`canopy: ` before it when `prefixed`).
    static func printError(_ line: String, prefixed: Bool = true) {
        let text = (prefixed ? "canopy: " : "") + line + "\n"
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { raw in
            _ = try? writeAll(UnsafeRawBufferPointer(raw), to: STDERR_FILENO)
        }
    }

    /// Writes `text` to stdout at once (for output that must not wait in a buffer, such as events).
    static func printNow(_ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = try? writeAll(UnsafeRawBufferPointer(bytes), to: STDOUT_FILENO) }
    }
}
