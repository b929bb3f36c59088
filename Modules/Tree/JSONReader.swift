/// Reads a JSON text piece by piece, for callers that need only some of its members: a realtime
/// message's envelope, say, whose objects need not be built to reach the request inside.
///
/// The reader holds the text's bytes and is valid only inside ``read(_:_:)``'s body.
///
/// ```swift
/// let number = try JSONReader.read(#"{"r": 7, "b": {"p": "a"}}"#) { reader in
///     var number: JSONValue?
///     try reader.readObject { name, reader in
///         let value = try reader.readValue()
///         if name == "r" { number = value }
///     }
///     return number   // 7
/// }
/// ```
public struct JSONReader {
    private var scanner: JSONScanner

    private init(_ scanner: JSONScanner) { self.scanner = scanner }

    /// Runs `body` on a reader of `text`, which must hold exactly one JSON value: `body` reads it,
    /// and only whitespace may follow.
    public static func read<Result>(
        _ text: String, _ body: (inout JSONReader) throws(TreeError) -> Result
    ) throws(TreeError) -> Result {
        var text = text
        let outcome = text.withUTF8 { bytes in
            Swift.Result { () throws(TreeError) -> Result in
                var reader = JSONReader(JSONScanner(bytes, isValidUTF8: true))
                reader.scanner.skipWhitespace()
                let result = try body(&reader)
                reader.scanner.skipWhitespace()
                guard reader.scanner.position == bytes.count else {
                    throw reader.scanner.error("unexpected text after the value")
                }
                return result
            }
        }
        return try outcome.get()
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
