import NIOCore
import NIOWebSocket
import Transport

extension WebSocketFrame {
    /// The payload as text, or `nil` when it is not valid UTF-8 (RFC 6455 §8.1: the connection
    /// must then fail).
    ///
    /// The payload is unmasked eight bytes at a time straight into the string's storage (NIO's
    /// `unmaskedData` unmasks byte by byte into a new buffer, which `String(buffer:)` then copies
    /// again). Building the string repairs invalid UTF-8 with U+FFFD, whose encoding starts with
    /// 0xEF; only text holding that byte is checked again, exactly, against the payload.
    var unmaskedText: String? {
        let text: String
        if let key = maskKey {
            text = data.withUnsafeReadableBytes { payload in
                String(unsafeUninitializedCapacity: payload.count) { target in
                    WebSocketMasking.apply(
                        key: (key[0], key[1], key[2], key[3]), from: payload, to: UnsafeMutableRawBufferPointer(target))
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
