import Foundation
import NIOCore

/// Where and why JSON text could not be read.
struct JSONSyntaxError: Error, CustomStringConvertible {
    let reason: String
    /// Bytes before the error.
    let offset: Int
    let line: Int
    let column: Int

    var description: String { "\(reason) at line \(line), column \(column) (byte \(offset))" }
}

/// Reads JSON text a token at a time from a file, stdin or memory, holding only a window of it
/// (64 KB, more only while one token is longer), so a document of any size is read in bounded memory.
///
/// The caller walks the structure: ``peekValue()`` says what comes next, ``enterObject()`` /
/// ``nextKey(first:)`` and ``enterArray()`` / ``nextElement(first:)`` step through containers,
/// ``readScalar()`` reads a string, number or literal. After a scalar or key,
/// ``appendToken(to:)`` copies its exact text (quotes and escapes included). Every byte is
/// checked: the grammar of RFC 8259, UTF-8 in strings, finite numbers.
///
/// ```swift
/// let reader = JSONStreamReader(bytes: Array(#"{"a": [1, "x"]}"#.utf8))
/// guard try reader.peekValue() == .object else { return }
/// try reader.enterObject()
/// while let key = try reader.nextKey(first: …) { … }
/// ```
///
/// Not thread-safe; one reader per task.
final class JSONStreamReader {
    /// What the next value is, from its first byte.
    enum ValueKind: Equatable {
        case object, array, string, number, literal
    }

    /// A scalar just read.
    struct Scalar {
        var kind: ValueKind
        /// For strings, the length of the decoded UTF-8 text; 0 otherwise.
        var decodedLength: Int
    }

    private var storage: UnsafeMutableRawBufferPointer
    private var bytes: UnsafeMutablePointer<UInt8>
    /// The next byte to read.
    private var position = 0
    /// The end of the bytes read so far.
    private var end = 0
    /// Bytes dropped from the front of `storage` so far.
    private var discarded = 0
    private var line = 1
    /// The absolute offset where the current line starts.
    private var lineStart = 0
    private var atEndOfInput = false
    /// The last scalar or key, as indexes into `storage`.
    private var token = 0..<0
    private let input: InputFile?
    private let chunkSize: Int
    /// The longest token accepted: longer strings cannot be stored anyway.
    let maxTokenBytes: Int
    /// Called with ``offset`` each time more input was read.
    var onRead: ((Int) -> Void)?

    /// Reads from `input` in chunks of `chunkSize` bytes.
    init(input: InputFile, chunkSize: Int = 1 << 16, maxTokenBytes: Int = 64 << 20) {
        self.input = input
        self.chunkSize = chunkSize
        self.maxTokenBytes = maxTokenBytes
        storage = .allocate(byteCount: chunkSize, alignment: 8)
        bytes = storage.baseAddress!.bindMemory(to: UInt8.self, capacity: chunkSize)
    }

    /// Reads `text` from memory.
    init(bytes text: UnsafeRawBufferPointer) {
        input = nil
        chunkSize = max(text.count, 1)
        maxTokenBytes = chunkSize
        storage = .allocate(byteCount: chunkSize, alignment: 8)
        storage.copyMemory(from: text)
        bytes = storage.baseAddress!.bindMemory(to: UInt8.self, capacity: chunkSize)
        end = text.count
        atEndOfInput = true
    }

    deinit { storage.deallocate() }

    /// Bytes read and consumed so far.
    var offset: Int { discarded + position }

    /// Where the reader is, for messages about what it just read.
    func currentLocation() -> JSONSyntaxError { error("") }

    // MARK: Structure

    /// Skips whitespace and says what the next value is, without consuming it.
    func peekValue() throws(JSONSyntaxError) -> ValueKind {
        guard try skipWhitespace() else { throw error("unexpected end of input, expected a value") }
        // Byte values, not UInt8(ascii:) calls: this runs for every value, also in debug builds.
        switch bytes[position] {
        case 0x7B: return .object  // {
        case 0x5B: return .array  // [
        case 0x22: return .string  // "
        case 0x2D, 0x30...0x39: return .number  // - 0-9
        case 0x74, 0x66, 0x6E: return .literal  // t f n
        default: throw error("unexpected \(describe(bytes[position])), expected a value")
        }
    }

    /// Consumes the `{` that ``peekValue()`` found.
    func enterObject() throws(JSONSyntaxError) { try consume(UInt8(ascii: "{"), "'{'") }

    /// Consumes the `[` that ``peekValue()`` found.
    func enterArray() throws(JSONSyntaxError) { try consume(UInt8(ascii: "["), "'['") }

    /// Reads the next member's key and its `:` (and the `,` before it unless `first`); `nil` after
    /// consuming the object's `}`.
    func nextKey(first: Bool) throws(JSONSyntaxError) -> String? {
        guard try skipWhitespace() else { throw error("unexpected end of input inside an object") }
        if bytes[position] == 0x7D {
            position += 1
            return nil
        }
        if !first {
            guard bytes[position] == 0x2C else {
                throw error("expected ',' or '}' after an object member, found \(describe(bytes[position]))")
            }
            position += 1
            guard try skipWhitespace() else { throw error("unexpected end of input inside an object") }
        }
        guard bytes[position] == 0x22 else {
            throw error("expected a key (a string in double quotes), found \(describe(bytes[position]))")
        }
        let hasEscapes = try scanString().hasEscapes
        let key = decodeKey(hasEscapes: hasEscapes)
        guard try skipWhitespace(), bytes[position] == 0x3A else {
            throw error("expected ':' after the key \(JSONPrinter.quoted(key))")
        }
        position += 1
        return key
    }

    /// Consumes the `,` before the next element unless `first`; `false` after consuming the array's `]`.
    func nextElement(first: Bool) throws(JSONSyntaxError) -> Bool {
        guard try skipWhitespace() else { throw error("unexpected end of input inside an array") }
        if bytes[position] == 0x5D {
            position += 1
            return false
        }
        if !first {
            guard bytes[position] == 0x2C else {
                throw error("expected ',' or ']' after an array element, found \(describe(bytes[position]))")
            }
            position += 1
        }
        return true
    }

    /// Reads the string, number or literal that ``peekValue()`` found.
    func readScalar() throws(JSONSyntaxError) -> Scalar {
        guard try skipWhitespace() else { throw error("unexpected end of input, expected a value") }
        switch bytes[position] {
        case 0x22:  // "
            let length = try scanString().decodedLength
            return Scalar(kind: .string, decodedLength: length)
        case 0x74:  // t
            try scanLiteral("true")
            return Scalar(kind: .literal, decodedLength: 0)
        case 0x66:  // f
            try scanLiteral("false")
            return Scalar(kind: .literal, decodedLength: 0)
        case 0x6E:  // n
            try scanLiteral("null")
            return Scalar(kind: .literal, decodedLength: 0)
        case 0x2D, 0x30...0x39:  // - 0-9
            try scanNumber()
            return Scalar(kind: .number, decodedLength: 0)
        default:
            throw error("unexpected \(describe(bytes[position])), expected a value")
        }
    }

    /// Checks that nothing but whitespace follows the value.
    func expectEnd() throws(JSONSyntaxError) {
        if try skipWhitespace() { throw error("unexpected \(describe(bytes[position])) after the JSON value") }
    }

    /// Skips a whole value and returns where its text is in memory (for a reader over memory only).
    func skipValue() throws(JSONSyntaxError) -> Range<Int> {
        let kind = try peekValue()
        let start = position
        switch kind {
        case .object:
            try enterObject()
            var first = true
            while try nextKey(first: first) != nil {
                first = false
                _ = try skipValue()
            }
        case .array:
            try enterArray()
            var first = true
            while try nextElement(first: first) {
                first = false
                _ = try skipValue()
            }
        case .string, .number, .literal:
            _ = try readScalar()
        }
        return start..<position
    }

    /// The bytes at `range` of a reader over memory (from ``skipValue()`` or ``tokenRange``).
    func text(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[range])
    }

    /// Where the last key or scalar is in memory (valid until the next read).
    var tokenRange: Range<Int> { token }

    /// Appends the exact text of the last key or scalar to `output`.
    func writeToken(to output: inout ByteBuffer) {
        output.writeBytes(UnsafeRawBufferPointer(rebasing: storage[token]))
    }

    /// The length of the last key or scalar's text.
    var tokenLength: Int { token.count }

    // MARK: Scanning

    /// Skips whitespace; `false` at the end of the input.
    ///
    /// The hot loops work on local copies of the window: every access to a class's stored property
    /// is checked for exclusivity at run time, which dominates unoptimized builds.
    private func skipWhitespace() throws(JSONSyntaxError) -> Bool {
        while true {
            let bytes = self.bytes
            let end = self.end
            var index = position
            while index < end {
                let byte = bytes[index]
                if byte == 0x20 || byte == 0x09 || byte == 0x0D {
                    index += 1
                } else if byte == 0x0A {
                    index += 1
                    line += 1
                    lineStart = discarded + index
                } else {
                    position = index
                    return true
                }
            }
            position = index
            if try refill(keeping: index) == nil { return false }
        }
    }

    private func consume(_ byte: UInt8, _ name: String) throws(JSONSyntaxError) {
        guard try skipWhitespace(), bytes[position] == byte else { throw error("expected \(name)") }
        position += 1
    }

    /// Scans the string at `position` (its opening quote); sets ``token`` to it.
    private func scanString() throws(JSONSyntaxError) -> (decodedLength: Int, hasEscapes: Bool) {
        var start = position
        var index = position + 1
        var decoded = 0
        var hasEscapes = false
        while true {
            // The common case: a run of plain ASCII.
            let bytes = self.bytes
            let end = self.end
            let runStart = index
            // Eight bytes at a time while none of them ends the run.
            while end - index >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self))
                let found = Self.runEnds(in: word)
                if found != 0 {
                    index += found.trailingZeroBitCount >> 3
                    break
                }
                index += 8
            }
            while index < end {
                let byte = bytes[index]
                if byte == 0x22 || byte == 0x5C || byte < 0x20 || byte >= 0x80 { break }
                index += 1
            }
            decoded += index - runStart
            if index >= end {
                guard let shift = try refill(keeping: start) else { throw error("unterminated string") }
                start -= shift
                index -= shift
                continue
            }
            let byte = bytes[index]
            if byte == 0x22 {
                position = index + 1
                token = start..<(index + 1)
                return (decoded, hasEscapes)
            }
            if byte < 0x20 {
                position = index
                throw error("a control character (\(describe(byte))) in a string; escape it as \\u00XX")
            }
            let needed = byte == 0x5C ? (index + 1 < end && bytes[index + 1] == 0x75 ? 6 : 2) : 4
            // Near the end of the window, read on first; at the end of the input, the checks below
            // see what is missing.
            if end - index < needed, !atEndOfInput, let shift = try refill(keeping: start) {
                start -= shift
                index -= shift
                continue
            }
            if byte == 0x5C {
                hasEscapes = true
                let (length, count) = try scanEscape(at: index)
                decoded += length
                index += count
            } else {
                let count = try scanUTF8(at: index)
                decoded += count
                index += count
            }
        }
    }

    /// The high bit of each byte of `word` (its first byte in the lowest bits) that is `"`, `\`, a
    /// control character or not ASCII; only the lowest set bit is exact (a borrow can mark a byte
    /// above a marked one), which is all a scan for the first such byte needs.
    static func runEnds(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & high }
        let quote = zeroBytes(word ^ (ones &* 0x22))
        let backslash = zeroBytes(word ^ (ones &* 0x5C))
        let control = (word &- ones &* 0x20) & ~word & high
        return quote | backslash | control | (word & high)
    }

    /// Checks the escape at `index`; returns the decoded UTF-8 length and the escape's length.
    private func scanEscape(at index: Int) throws(JSONSyntaxError) -> (Int, Int) {
        guard index + 1 < end else { throw errorAt(index, "unterminated string") }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return (1, 2)
        case UInt8(ascii: "u"):
            guard index + 6 <= end, let code = hexValue(at: index + 2) else {
                throw errorAt(index, "a \\u escape needs four hexadecimal digits")
            }
            // A surrogate half counts 2 bytes: a pair makes the 4 of its UTF-8 form.
            let length = code < 0x80 ? 1 : code < 0x800 ? 2 : (0xD800...0xDFFF).contains(code) ? 2 : 3
            return (length, 6)
        default:
            throw errorAt(index, "invalid escape \\\(describe(bytes[index + 1]))")
        }
    }

    private func hexValue(at index: Int) -> UInt32? {
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Checks the UTF-8 sequence at `index` (RFC 3629: no overlong forms, no surrogates); returns its length.
    private func scanUTF8(at index: Int) throws(JSONSyntaxError) -> Int {
        let lead = bytes[index]
        let count: Int
        let minimum: UInt32
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: (count, minimum, scalar) = (2, 0x80, UInt32(lead & 0x1F))
        case 0xE0...0xEF: (count, minimum, scalar) = (3, 0x800, UInt32(lead & 0x0F))
        case 0xF0...0xF4: (count, minimum, scalar) = (4, 0x10000, UInt32(lead & 0x07))
        default: throw errorAt(index, "invalid UTF-8 in a string")
        }
        guard index + count <= end else { throw errorAt(index, "invalid UTF-8 in a string") }
        for offset in 1..<count {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else { throw errorAt(index, "invalid UTF-8 in a string") }
            scalar = scalar << 6 | UInt32(byte & 0x3F)
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw errorAt(index, "invalid UTF-8 in a string")
        }
        return count
    }

    private func scanLiteral(_ word: StaticString) throws(JSONSyntaxError) {
        let length = word.utf8CodeUnitCount
        var start = position
        while end - start < length, !atEndOfInput {
            guard let shift = try refill(keeping: start) else { break }
            start -= shift
        }
        guard end - start >= length, memcmp(bytes + start, word.utf8Start, length) == 0 else {
            position = start
            throw error("invalid literal, expected \(word)")
        }
        position = start + length
        token = start..<position
    }

    /// Scans a number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, which must be finite.
    private func scanNumber() throws(JSONSyntaxError) {
        var start = position
        var index = position
        var hasExponent = false
        while true {
            let bytes = self.bytes
            let end = self.end
            while index < end {
                let byte = bytes[index]
                if (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E || byte == 0x2B {
                    index += 1
                } else if byte == 0x65 || byte == 0x45 {
                    hasExponent = true
                    index += 1
                } else {
                    break
                }
            }
            if index < end || atEndOfInput { break }
            guard let shift = try refill(keeping: start) else { break }
            start -= shift
            index -= shift
        }
        position = start
        let text = UnsafeBufferPointer(start: bytes + start, count: index - start)
        guard Self.isNumber(text) else {
            throw error("invalid number \(String(decoding: text, as: UTF8.self))")
        }
        if hasExponent || text.count > 300 {
            let value = Double(String(decoding: text, as: UTF8.self))
            guard let value, value.isFinite else {
                throw error("the number \(String(decoding: text, as: UTF8.self)) is out of range for a double")
            }
        }
        position = index
        token = start..<index
    }

    /// Whether `text` is a JSON number, checked as one pass over its bytes.
    private static func isNumber(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        // States: 0 start, 1 after '-', 2 after a leading '0', 3 in integer digits, 4 after '.',
        // 5 in fraction digits, 6 after 'e', 7 after the exponent's sign, 8 in exponent digits.
        var state = 0
        for byte in text {
            let isDigit = byte >= 0x30 && byte <= 0x39
            switch state {
            case 0: state = byte == 0x2D ? 1 : byte == 0x30 ? 2 : isDigit ? 3 : -1
            case 1: state = byte == 0x30 ? 2 : isDigit ? 3 : -1
            case 2, 3:
                if isDigit, state == 3 {
                    state = 3
                } else {
                    state = byte == 0x2E ? 4 : (byte == 0x65 || byte == 0x45) ? 6 : -1
                }
            case 4: state = isDigit ? 5 : -1
            case 5: state = isDigit ? 5 : (byte == 0x65 || byte == 0x45) ? 6 : -1
            case 6: state = isDigit ? 8 : (byte == 0x2B || byte == 0x2D) ? 7 : -1
            case 7, 8: state = isDigit ? 8 : -1
            default: return false
            }
            if state < 0 { return false }
        }
        return state == 2 || state == 3 || state == 5 || state == 8
    }

    /// Decodes the key in ``token`` (quotes included).
    private func decodeKey(hasEscapes: Bool) -> String {
        let inner = UnsafeRawBufferPointer(rebasing: storage[(token.lowerBound + 1)..<(token.upperBound - 1)])
        guard hasEscapes else { return String(decoding: inner, as: UTF8.self) }
        // Escaped keys are rare: let Foundation decode the (already checked) string literal.
        let literal = Data(UnsafeRawBufferPointer(rebasing: storage[token]))
        return (try? JSONDecoder().decode(String.self, from: literal)) ?? String(decoding: inner, as: UTF8.self)
    }

    // MARK: Input

    /// Reads more input, first moving the bytes from `keep` on to the front (growing the window
    /// when they fill it); returns how far they moved, or `nil` at the end of the input.
    private func refill(keeping keep: Int) throws(JSONSyntaxError) -> Int? {
        guard !atEndOfInput, let input else { return nil }
        let shift = keep
        if shift > 0 {
            let kept = end - keep
            if kept > 0 { memmove(bytes, bytes + keep, kept) }
            discarded += shift
            position -= shift
            end = kept
            token = 0..<0
        }
        if end == storage.count {
            guard storage.count < maxTokenBytes + chunkSize else {
                throw error("a value of more than \(ByteCount(maxTokenBytes)) in one piece")
            }
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: storage.count * 2, alignment: 8)
            grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0..<end]))
            storage.deallocate()
            storage = grown
            bytes = grown.baseAddress!.bindMemory(to: UInt8.self, capacity: grown.count)
        } else if storage.count > chunkSize * 2, end < chunkSize {
            // A long token made the window grow: shrink it back once that token is consumed.
            let shrunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize * 2, alignment: 8)
            shrunk.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0..<end]))
            storage.deallocate()
            storage = shrunk
            bytes = shrunk.baseAddress!.bindMemory(to: UInt8.self, capacity: shrunk.count)
        }
        let count: Int
        do {
            count = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: storage[end...]))
        } catch {
            throw self.error("\(error)")
        }
        if count == 0 {
            atEndOfInput = true
            return shift == 0 ? nil : shift
        }
        end += count
        onRead?(offset)
        return shift
    }

    // MARK: Errors

    private func error(_ reason: String) -> JSONSyntaxError { errorAt(position, reason) }

    private func errorAt(_ index: Int, _ reason: String) -> JSONSyntaxError {
        let absolute = discarded + index
        return JSONSyntaxError(reason: reason, offset: absolute, line: line, column: absolute - lineStart + 1)
    }

    private func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E: "'\(Character(Unicode.Scalar(byte)))'"
        default: String(format: "byte 0x%02X", byte)
        }
    }
}
