import NIOWebSocket

/// Why a realtime WebSocket was failed (RFC 6455 §7.1.7), and the close code that says so.
enum WebSocketViolation: Error, Hashable, CustomStringConvertible {
    /// A frame with an opcode RFC 6455 reserves (0x3–0x7, 0xB–0xF).
    case reservedOpcode(UInt8)
    /// A frame with RSV1, RSV2 or RSV3 set, although no extension was negotiated.
    case reservedBitsSet
    /// A client frame without a masking key.
    case unmaskedFrame
    /// A text message that is not valid UTF-8.
    case invalidUTF8

    /// 1007 for text that is not UTF-8 (§8.1), 1002 (protocol error) for the rest.
    var closeCode: WebSocketErrorCode {
        switch self {
        case .invalidUTF8: .dataInconsistentWithMessage
        case .reservedOpcode, .reservedBitsSet, .unmaskedFrame: .protocolError
        }
    }

    var description: String {
        switch self {
        case .reservedOpcode(let opcode): "frame with reserved opcode 0x\(String(opcode, radix: 16))"
        case .reservedBitsSet: "frame with reserved bits set, but no extension was negotiated"
        case .unmaskedFrame: "client frame without a mask"
        case .invalidUTF8: "text message that is not valid UTF-8"
        }
    }

    /// What is wrong with a frame whose first byte is `byte` (FIN, RSV1–3, opcode), if anything.
    static func inFirstByte(_ byte: UInt8) -> WebSocketViolation? {
        let opcode = byte & 0x0F
        switch opcode {
        case 0x0, 0x1, 0x2, 0x8, 0x9, 0xA: break
        default: return .reservedOpcode(opcode)
        }
        if byte & 0x70 != 0 { return .reservedBitsSet }
        return nil
    }
}
