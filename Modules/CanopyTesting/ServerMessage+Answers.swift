public import Transport
public import Tree

extension [ServerMessage] {
    /// The status of the answer to request `number`, if it is among these messages.
    public func status(of number: Int) -> ResponseStatus? {
        for case .response(number, let status, _) in self { return status }
        return nil
    }

    /// The data of the answer to request `number`, if it is among these messages.
    public func data(of number: Int) -> JSONValue? {
        for case .response(number, _, let data) in self { return data }
        return nil
    }

    /// The data of every `d` push, in order.
    public var overwrites: [JSONValue] {
        compactMap { message in
            if case .overwrite(_, let data, _) = message { return data }
            return nil
        }
    }
}
