import NIOCore
import NIOWebSocket
import Transport

/// A WebSocket frame a client sent, as ``WebSocketFrameReader`` reads it: its payload as it arrived
/// (masked), and its masking key as four bytes.
///
/// NIO's `WebSocketFrame` keeps its payload in an object of its own, and a masking key read from
/// bytes is made through a generic initializer that allocates for each byte it reads: with both,
/// reading a frame cost six allocations, a third of what a write cost the server. This is a value.
struct InboundFrame {
    var fin: Bool
    var opcode: WebSocketOpcode
    /// The key the payload is masked with; `nil` when it is not masked (a message joined from its
    /// fragments, unmasked as it was joined).
    var maskKey: (UInt8, UInt8, UInt8, UInt8)?
    /// The payload as it arrived.
    var data: ByteBuffer

    init(fin: Bool, opcode: WebSocketOpcode, maskKey: (UInt8, UInt8, UInt8, UInt8)? = nil, data: ByteBuffer) {
        self.fin = fin
        self.opcode = opcode
        self.maskKey = maskKey
        self.data = data
    }

    /// The payload's length in bytes.
    var length: Int { data.readableBytes }

    /// The payload, unmasked.
    var unmaskedData: ByteBuffer {
        guard let key = maskKey else { return data }
        var unmasked = ByteBuffer()
        unmasked.reserveCapacity(data.readableBytes)
        data.withUnsafeReadableBytes { payload in
            _ = unmasked.writeWithUnsafeMutableBytes(minimumWritableBytes: payload.count) { target in
                WebSocketMasking.apply(key: key, from: payload, to: target)
                return payload.count
            }
        }
        return unmasked
    }

    /// The payload as text, or `nil` when it is not valid UTF-8 (RFC 6455 §8.1: the connection
    /// must then fail).
    ///
    /// The payload is unmasked eight bytes at a time straight into the string's storage. Building
    /// the string repairs invalid UTF-8 with U+FFFD, whose encoding starts with 0xEF; only text
    /// holding that byte is checked again, exactly, against the payload.
    var unmaskedText: String? {
        let text: String
        if let key = maskKey {
            text = data.withUnsafeReadableBytes { payload in
                String(unsafeUninitializedCapacity: payload.count) { target in
                    WebSocketMasking.apply(key: key, from: payload, to: UnsafeMutableRawBufferPointer(target))
                    return payload.count
                }
            }
        } else {
            text = String(buffer: data)
        }
        let utf8 = text.utf8
        let mayBeRepaired = utf8.withContiguousStorageIfAvailable { $0.contains(0xEF) } ?? utf8.contains(0xEF)
        guard mayBeRepaired else { return text }
        return String(validating: unmaskedData.readableBytesView, as: UTF8.self)
    }
}
