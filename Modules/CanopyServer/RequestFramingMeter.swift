import NIOCore

/// Follows the framing of each request in the raw bytes, before NIO's HTTP decoder sees them:
///
/// - so that an error from the decoder can be told apart: it reports an over-long URL and an
///   over-long header block with the same error, and it calls a request line ending in a bare LF
///   a bad version (``inRequestLine``, ``requestLineEndsInBareLF``);
/// - to refuse a chunk of a chunked body that the decoder would wait for without end, as soon as
///   its size line arrived: a size that does not fit in 63 bits (400), or one over the body limit
///   (413). It fires the ``HTTPRefusal`` as an error (``HTTPErrorHandler`` answers it) and passes
///   nothing more on.
///
/// It hands the decoder one request's bytes at a time, so that what it says is about the request
/// the decoder is on. After a request asking for another protocol (`Upgrade`, `CONNECT`) it only
/// passes bytes on.
final class RequestFramingMeter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Whether the request line is still being received (no line end seen yet).
    private(set) var inRequestLine = true
    /// Whether the request line ended in LF without CR.
    private(set) var requestLineEndsInBareLF = false

    private enum State {
        case requestLine
        case headers
        case fixedBody(remaining: UInt64)
        case chunkSize(size: UInt64, digits: Int, inExtension: Bool)
        case chunkData(remaining: UInt64)
        /// The CRLF after a chunk's data.
        case chunkDataEnd
        case trailers
        case passThrough
        case refused
    }

    /// Longest header line kept to be read (the fields read here are short).
    private static let keptLineBytes = 1024

    private let maxChunkBytes: Int
    private var state = State.requestLine
    private var lineLength = 0
    private var previousByte: UInt8 = 0
    private var line: [UInt8] = []
    private var method: [UInt8] = []
    private var contentLength: UInt64 = 0
    private var chunked = false
    private var connectMethod = false
    private var upgradeField = false
    private var connectionUpgrade = false

    init(maxChunkBytes: Int) {
        self.maxChunkBytes = maxChunkBytes
    }

    /// Passes every byte on from now on: the connection is switching to another protocol.
    func passThrough() {
        state = .passThrough
    }

    private enum Step {
        case next
        case messageEnded
        case refuse(HTTPRefusal)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        var index = buffer.readerIndex
        while index < buffer.writerIndex {
            switch state {
            case .passThrough:
                context.fireChannelRead(wrapInboundOut(buffer))
                return
            case .refused:
                return
            case .fixedBody(let remaining):
                let taken = min(remaining, UInt64(buffer.writerIndex - index))
                index += Int(taken)
                if taken < remaining {
                    state = .fixedBody(remaining: remaining - taken)
                } else {
                    handOn(&buffer, upTo: index, context: context)
                }
            case .chunkData(let remaining):
                let taken = min(remaining, UInt64(buffer.writerIndex - index))
                index += Int(taken)
                state = taken < remaining ? .chunkData(remaining: remaining - taken) : .chunkDataEnd
            default:
                guard let byte = buffer.getInteger(at: index, as: UInt8.self) else { return }
                switch step(byte) {
                case .next:
                    index += 1
                case .messageEnded:
                    index += 1
                    handOn(&buffer, upTo: index, context: context)
                case .refuse(let refusal):
                    state = .refused
                    if index > buffer.readerIndex, let before = buffer.readSlice(length: index - buffer.readerIndex) {
                        context.fireChannelRead(wrapInboundOut(before))
                    }
                    context.fireErrorCaught(refusal)
                    return
                }
            }
        }
        if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
    }

    /// Passes on the request that ends at `index`, then starts watching for the next one.
    private func handOn(_ buffer: inout ByteBuffer, upTo index: Int, context: ChannelHandlerContext) {
        if let request = buffer.readSlice(length: index - buffer.readerIndex) {
            context.fireChannelRead(wrapInboundOut(request))
        }
        // The request may have switched the connection to another protocol meanwhile.
        if case .passThrough = state { return }
        state = .requestLine
        inRequestLine = true
        requestLineEndsInBareLF = false
        lineLength = 0
        previousByte = 0
        method.removeAll(keepingCapacity: true)
        contentLength = 0
        chunked = false
        connectMethod = false
        upgradeField = false
        connectionUpgrade = false
    }

    private func step(_ byte: UInt8) -> Step {
        defer { previousByte = byte }
        switch state {
        case .requestLine:
            guard byte == UInt8(ascii: "\n") else {
                if byte != UInt8(ascii: "\r") { lineLength += 1 }
                if method.count < 8, lineLength > 0 { method.append(byte) }
                return .next
            }
            // Empty lines before a request are allowed (RFC 9112 §2.2).
            if lineLength == 0 { return .next }
            inRequestLine = false
            requestLineEndsInBareLF = previousByte != UInt8(ascii: "\r")
            connectMethod = method.starts(with: "CONNECT ".utf8)
            line.removeAll(keepingCapacity: true)
            state = .headers
            return .next
        case .headers:
            guard byte == UInt8(ascii: "\n") else {
                if line.count < Self.keptLineBytes { line.append(byte) }
                return .next
            }
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            guard line.isEmpty else {
                readField()
                line.removeAll(keepingCapacity: true)
                return .next
            }
            // As llhttp: what follows is another protocol's.
            if connectMethod || (upgradeField && connectionUpgrade) {
                state = .passThrough
                return .messageEnded
            }
            if chunked {
                state = .chunkSize(size: 0, digits: 0, inExtension: false)
                return .next
            }
            guard contentLength > 0 else { return .messageEnded }
            state = .fixedBody(remaining: contentLength)
            return .next
        case .chunkSize(let size, let digits, let inExtension):
            return chunkSize(byte, size: size, digits: digits, inExtension: inExtension)
        case .chunkDataEnd:
            if byte == UInt8(ascii: "\n") { state = .chunkSize(size: 0, digits: 0, inExtension: false) }
            return .next
        case .trailers:
            guard byte == UInt8(ascii: "\n") else {
                if byte != UInt8(ascii: "\r") { lineLength += 1 }
                return .next
            }
            if lineLength == 0 { return .messageEnded }
            lineLength = 0
            return .next
        case .fixedBody, .chunkData, .passThrough, .refused:
            return .next
        }
    }

    private func chunkSize(_ byte: UInt8, size: UInt64, digits: Int, inExtension: Bool) -> Step {
        if byte == UInt8(ascii: "\n") {
            guard digits > 0 else {
                // Not a size: the decoder refuses it.
                state = .passThrough
                return .next
            }
            if size > UInt64(Int64.max) { return .refuse(.chunkSizeOverflow) }
            if size > UInt64(maxChunkBytes) {
                return .refuse(.bodyTooLarge(limit: maxChunkBytes, announced: "a chunk of \(size) bytes"))
            }
            if size == 0 {
                lineLength = 0
                state = .trailers
            } else {
                state = .chunkData(remaining: size)
            }
            return .next
        }
        guard !inExtension, let digit = Self.hexValue(byte) else {
            if byte != UInt8(ascii: "\r") { state = .chunkSize(size: size, digits: digits, inExtension: true) }
            return .next
        }
        // Sixteen hexadecimal digits hold 64 bits; a seventeenth significant one cannot fit.
        if size > UInt64.max >> 4 { return .refuse(.chunkSizeOverflow) }
        state = .chunkSize(size: size << 4 | UInt64(digit), digits: digits + 1, inExtension: false)
        return .next
    }

    /// Notes what the header line in `line` says about the body's framing.
    private func readField() {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = line[..<colon]
        let value = Self.trimmed(line[(colon + 1)...])
        if Self.matches(name, "content-length") {
            contentLength = 0
            for byte in value {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), contentLength < UInt64.max / 20 else {
                    return
                }
                contentLength = contentLength * 10 + UInt64(byte - UInt8(ascii: "0"))
            }
        } else if Self.matches(name, "transfer-encoding") {
            // The body is chunked when chunked is the last coding (RFC 9112 §6.3).
            let last = value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).last ?? value
            chunked = Self.matches(Self.trimmed(last), "chunked")
        } else if Self.matches(name, "upgrade") {
            upgradeField = true
        } else if Self.matches(name, "connection") {
            for option in value.split(separator: UInt8(ascii: ",")) where Self.matches(Self.trimmed(option), "upgrade")
            {
                connectionUpgrade = true
            }
        }
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return bytes[first...last]
    }

    /// Whether `bytes` are `name` (lower-case ASCII), ignoring case.
    private static func matches(_ bytes: ArraySlice<UInt8>, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        return name.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { byte, lower in
                byte == lower || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte + 32 == lower)
            }
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
