/// Reads a JSON text piece by piece, for callers that need only some of its members: a realtime
/// message's envelope, say, whose objects need not be built to reach the request inside.
///
/// The reader holds the text's bytes and is valid only inside ``read(_:_:)``'s body.
///
/// ```swift
/// var number: JSONValue?
/// try JSONReader.read(#"{"r": 7, "b": {"p": "a"}}"#) { reader in
///     try reader.readObject { name, reader in
///         let value = try reader.readValue()
///         if name == "r" { number = value }
///     }
/// }
/// // number == 7
/// ```
public struct JSONReader {
    private var scanner: JSONScanner

    private init(_ scanner: JSONScanner) { self.scanner = scanner }

    /// Runs `body` on a reader of `text`, which must hold exactly one JSON value: `body` reads it,
    /// and only whitespace may follow. (Not generic: a generic reader called from another module
    /// looked up its type metadata at run time on every call.)
    public static func read(_ text: String, _ body: (inout JSONReader) throws(TreeError) -> Void) throws(TreeError) {
        var text = text
        var failure: TreeError?
        text.withUTF8 { bytes in
            do throws(TreeError) {
                var reader = JSONReader(JSONScanner(bytes, isValidUTF8: true))
                reader.scanner.skipWhitespace()
                try body(&reader)
                reader.scanner.skipWhitespace()
                guard reader.scanner.position == bytes.count else {
                    throw reader.scanner.error("unexpected text after the value")
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Whether the next value is an object.
    public var isAtObject: Bool {
        scanner.position < scanner.bytes.count && scanner.bytes[scanner.position] == UInt8(ascii: "{")
    }

    /// Reads the next value whole.
    public mutating func readValue() throws(TreeError) -> JSONValue {
        let value = try scanner.value()
        scanner.skipWhitespace()
        return value
    }

    /// Reads the next value, an object, member by member: `member` gets each name in text order
    /// (a repeated name comes again) and must read its value with this reader.
    public mutating func readObject(_ member: (String, inout JSONReader) throws(TreeError) -> Void) throws(TreeError) {
        guard isAtObject else { throw scanner.error("expected an object") }
        try scanner.enter()
        defer { scanner.depth -= 1 }
        scanner.position += 1
        scanner.skipWhitespace()
        if scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == UInt8(ascii: "}") {
            scanner.position += 1
            scanner.skipWhitespace()
            return
        }
        while true {
            scanner.skipWhitespace()
            guard scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == UInt8(ascii: "\"") else {
                throw scanner.error("expected a member name")
            }
            let name = try scanner.string()
            scanner.skipWhitespace()
            guard scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == UInt8(ascii: ":") else {
                throw scanner.error("expected ':'")
            }
            scanner.position += 1
            scanner.skipWhitespace()
            try member(name, &self)
            scanner.skipWhitespace()
            guard scanner.position < scanner.bytes.count else { throw scanner.error("unexpected end of input") }
            if scanner.bytes[scanner.position] == UInt8(ascii: ",") {
                scanner.position += 1
                continue
            }
            guard scanner.bytes[scanner.position] == UInt8(ascii: "}") else {
                throw scanner.error("expected ',' or '}'")
            }
            scanner.position += 1
            scanner.skipWhitespace()
            return
        }
    }
}
