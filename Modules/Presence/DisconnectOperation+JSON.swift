public import Tree

extension DisconnectOperation {
    /// The operation as a store keeps it: `{"p": path, "s": value}` for a set, `{"p": path, "u":
    /// {child paths: values}}` for an update. Values stay unresolved (`{".sv": …}` included).
    public var json: JSONValue {
        switch kind {
        case .set(let value): ["p": .string(path.wireString), "s": value]
        case .update(let members): ["p": .string(path.wireString), "u": .object(members)]
        }
    }

    /// Reads what ``json`` wrote; `nil` for anything else.
    public init?(json: JSONValue) {
        guard let text = json["p"]?.stringValue, let path = try? Path(validating: text) else { return nil }
        if let value = json["s"] {
            self.init(path: path, kind: .set(value))
        } else if let members = json["u"]?.objectValue {
            self.init(path: path, kind: .update(members))
        } else {
            return nil
        }
    }
}
