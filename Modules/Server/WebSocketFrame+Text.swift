import NIOCore
import NIOWebSocket

extension WebSocketFrame {
    /// The payload as text, unmasked eight bytes at a time straight into the string's storage
    /// (NIO's `unmaskedData` unmasks byte by byte into a new buffer, which `String(buffer:)` then
    /// copies again). Invalid UTF-8 is repaired, as `String(buffer:)` repairs it.
    var unmaskedText: String {
        guard let key = maskKey else { return String(buffer: data) }
        let keyBytes = (key[0], key[1], key[2], key[3])
        var wide: UInt64 = 0
        withUnsafeMutableBytes(of: &wide) { word in
            for index in 0..<8 {
                switch index % 4 {
                case 0: word[index] = keyBytes.0
                case 1: word[index] = keyBytes.1
                case 2: word[index] = keyBytes.2
                default: word[index] = keyBytes.3
                }
            }
        }
        return data.withUnsafeReadableBytes { payload in
            String(unsafeUninitializedCapacity: payload.count) { target in
                let output = UnsafeMutableRawBufferPointer(target)
                var offset = 0
                while offset + 8 <= payload.count {
                    let masked = payload.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    output.storeBytes(of: masked ^ wide, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                }
                while offset < payload.count {
                    output[offset] = payload[offset] ^ key[offset % 4]
                    offset += 1
                }
                return payload.count
            }
        }
    }
}
