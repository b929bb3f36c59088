public import Tree

extension RulesDocument {
    /// The JSON of a rules document's text without its comments, as Firebase answers
    /// `GET /.settings/rules.json?format=strict` (and as tools that read the document with a plain
    /// JSON parser need it).
    ///
    /// ```swift
    /// try RulesDocument.strictJSON(of: "{ // open\n \"rules\": {\".read\": true} }")
    /// // {"rules": {".read": true}}
    /// ```
    public static func strictJSON(of text: String) throws(RulesError) -> JSONValue {
        var reader = DocumentReader(text: text)
        return try reader.readDocument().json
    }
}

extension DocumentValue {
    var json: JSONValue {
        switch content {
        case .null: .null
        case .bool(let value): .bool(value)
        case .number(let value): .number(value)
        case .string(let value): .string(value)
        case .array(let elements): .array(elements.map(\.json))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key, $0.value.json) }) { _, last in last })
        }
    }
}
