import NIOCore

/// One value of Redis's wire protocol, RESP2: what a reply or a pushed pub/sub message is made of.
enum RESPValue: Sendable, Equatable {
    /// `+OK`
    case simple(String)
    /// `-ERR …`
    case error(String)
    /// `:42`
    case integer(Int)
    /// `$5 hello`; `nil` for the null bulk string `$-1`.
    case bulk(ByteBuffer?)
    /// `*3 …`; `nil` for the null array `*-1`.
    case array([RESPValue]?)

    /// The text of a simple or bulk string.
    var text: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let buffer?): String(buffer: buffer)
        default: nil
        }
    }

    /// Appends a command (an array of bulk strings, as clients send them) to `buffer`.
    static func writeCommand(_ arguments: [String], to buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.utf8.count)\r\n")
            buffer.writeString(argument)
            buffer.writeString("\r\n")
        }
    }
}

/// A RESP value malformed on the wire.
struct RESPDecodingError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "malformed RESP from the server: \(reason)" }
}

/// Cuts the byte stream from a Redis server into ``RESPValue``s; waits for more bytes when a value
/// is not complete yet. Bulk strings are slices of the read buffer, not copies.
struct RESPDecoder {
    /// Nesting deeper than this is refused (a pub/sub message is an array of three strings).
    static let maxDepth = 16

    /// The next complete value, consumed from `buffer`; `nil` (and `buffer` unchanged) when its bytes
    /// have not all arrived.
    mutating func decode(buffer: inout ByteBuffer) throws -> RESPValue? {
        var reader = buffer
        guard let value = try Self.read(&reader, depth: 0) else { return nil }
        buffer = reader
        return value
    }

    /// Reads one value from `buffer`, or returns `nil` (leaving `buffer` in an unspecified state)
    /// when the bytes for it have not all arrived.
    private static func read(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard depth < maxDepth else { throw RESPDecodingError(reason: "nested deeper than \(maxDepth)") }
        guard let type = buffer.readInteger(as: UInt8.self) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            return readLine(&buffer).map { .simple($0) }
        case UInt8(ascii: "-"):
            return readLine(&buffer).map { .error($0) }
        case UInt8(ascii: ":"):
            return try readNumber(&buffer).map { .integer($0) }
        case UInt8(ascii: "$"):
            guard let length = try readNumber(&buffer) else { return nil }
            guard length >= -1 else { throw RESPDecodingError(reason: "bulk length \(length)") }
            if length == -1 { return .bulk(nil) }
            guard buffer.readableBytes >= length + 2, let bytes = buffer.readSlice(length: length) else { return nil }
            buffer.moveReaderIndex(forwardBy: 2)
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            guard let count = try readNumber(&buffer) else { return nil }
            guard count >= -1 else { throw RESPDecodingError(reason: "array length \(count)") }
            if count == -1 { return .array(nil) }
            var elements: [RESPValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                guard let element = try read(&buffer, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw RESPDecodingError(reason: "type byte \(type)")
        }
    }

    /// The text up to the next CRLF, which is consumed; `nil` when no CRLF has arrived yet.
    private static func readLine(_ buffer: inout ByteBuffer) -> String? {
        guard let end = lineEnd(buffer) else { return nil }
        let line = buffer.readString(length: end - buffer.readerIndex)
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }

    /// The decimal integer up to the next CRLF, read from the bytes without making a string.
    private static func readNumber(_ buffer: inout ByteBuffer) throws -> Int? {
        guard let end = lineEnd(buffer) else { return nil }
        let bytes = buffer.readableBytesView
        var index = bytes.startIndex
        let negative = index < end && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < end, end - index <= 18 else {
            throw RESPDecodingError(reason: "a number of \(end - index) digits")
        }
        var value = 0
        while index < end {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { throw RESPDecodingError(reason: "a non-digit in a number") }
            value = value * 10 + Int(digit)
            index += 1
        }
        buffer.moveReaderIndex(to: end + 2)
        return negative ? -value : value
    }

    /// The index of the CR of the next CRLF, once both bytes have arrived.
    private static func lineEnd(_ buffer: ByteBuffer) -> Int? {
        let bytes = buffer.readableBytesView
        guard let end = bytes.firstIndex(of: UInt8(ascii: "\r")), end + 1 < bytes.endIndex else { return nil }
        return end
    }
}
