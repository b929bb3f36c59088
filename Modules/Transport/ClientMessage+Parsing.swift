import Tree

extension ClientMessage {
    /// Decodes the text of one assembled message: the same as
    /// `ClientMessage(json: JSONValue(parsing: text))`, without building the envelope's objects.
    /// Text that is not JSON throws ``ProtocolError/malformedJSON(_:)``.
    ///
    /// ```swift
    /// let message = try ClientMessage(parsing: #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"a","d":1}}}"#)
    /// // .request(ClientRequest(number: 1, action: .put(path: "a", data: 1, hash: nil)))
    /// ```
    public init(parsing text: String) throws(ProtocolError) {
        var envelope = Envelope()
        do throws(TreeError) {
            try JSONReader.read(text) { (reader) throws(TreeError) in
                guard reader.isAtObject else {
                    _ = try reader.readValue()
                    return
                }
                try reader.readObject { (name, reader) throws(TreeError) in
                    switch name {
                    case "t": envelope.type = try reader.readValue()
                    case "d" where reader.isAtObject: envelope.body = try RequestFields(reading: &reader)
                    case "d":
                        _ = try reader.readValue()
                        envelope.body = nil
                    default:
                        _ = try reader.readValue()
                    }
                }
            }
        } catch {
            throw .malformedJSON(error.description)
        }
        guard let body = envelope.body else { throw .malformedMessage("expected {\"t\": ..., \"d\": {...}}") }
        try self.init(type: envelope.type, body: body)
    }

    private struct Envelope {
        var type: JSONValue?
        /// The `d` object (`nil` when absent or not an object).
        var body: RequestFields?
    }
}
