/// The XOR masking of WebSocket payloads (RFC 6455, section 5.3), eight bytes at a time: clients
/// mask every frame they send, servers unmask what they receive.
///
/// ```swift
/// WebSocketMasking.apply(key: (1, 2, 3, 4), from: UnsafeRawBufferPointer(payload), to: output)
/// ```
public enum WebSocketMasking {
    /// Writes `source` XOR the repeated four-byte `key` into the first `source.count` bytes of
    /// `target`, which may be the same memory (masking in place).
    public static func apply(
        key: (UInt8, UInt8, UInt8, UInt8), from source: UnsafeRawBufferPointer, to target: UnsafeMutableRawBufferPointer
    ) {
        precondition(target.count >= source.count, "WebSocketMasking.apply: target shorter than source")
        withUnsafeBytes(of: key) { keyBytes in
            var wide: UInt64 = 0
            withUnsafeMutableBytes(of: &wide) { word in
                for index in 0..<8 { word[index] = keyBytes[index % 4] }
            }
            var offset = 0
            while offset + 8 <= source.count {
                let word = source.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                target.storeBytes(of: word ^ wide, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            while offset < source.count {
                target[offset] = source[offset] ^ keyBytes[offset % 4]
                offset += 1
            }
        }
    }
}
