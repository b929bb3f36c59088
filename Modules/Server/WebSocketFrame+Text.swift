import NIOCore
import NIOWebSocket
import Transport

extension WebSocketFrame {
    /// The payload as text, unmasked eight bytes at a time straight into the string's storage
    /// (NIO's `unmaskedData` unmasks byte by byte into a new buffer, which `String(buffer:)` then
    /// copies again). Invalid UTF-8 is repaired, as `String(buffer:)` repairs it.
    var unmaskedText: String {
        guard let key = maskKey else { return String(buffer: data) }
        return data.withUnsafeReadableBytes { payload in
            String(unsafeUninitializedCapacity: payload.count) { target in
                WebSocketMasking.apply(
                    key: (key[0], key[1], key[2], key[3]), from: payload, to: UnsafeMutableRawBufferPointer(target))
                return payload.count
            }
        }
    }
}
