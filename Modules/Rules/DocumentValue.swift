/// A JSON value read from a rules document, remembering where it starts so that errors can point
/// at it.
struct DocumentValue {
    enum Content {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([DocumentValue])
        case object([DocumentMember])
    }

    var content: Content
    /// Offset of the value's first character in the document, in Unicode scalars.
    var start: Int

    /// What the value is, for messages ("a number", "an object").
    var kindDescription: String {
        switch content {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"key": value` member of an object in a rules document.
struct DocumentMember {
    var key: String
    /// Offset of the key's opening quote in the document, in Unicode scalars.
    var keyStart: Int
    var value: DocumentValue
}
