public import Tree

/// A write registered to run when a connection goes away.
public struct DisconnectOperation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `onDisconnect().set(data)`.
        case set(JSONValue)
        /// `onDisconnect().update(data)`: child paths relative to the location.
        case update([String: JSONValue])
    }

    public var path: Path
    public var kind: Kind

    public init(path: Path, kind: Kind) {
        self.path = path
        self.kind = kind
    }
}

/// The onDisconnect operations one connection registered, in registration order.
///
/// Operations belong to the connection that registered them: a newer connection of the same client
/// has its own set, so an old connection's operations can never overwrite what the newer one wrote
/// after it (the server runs the old set when the old connection ends, before the new one proceeds).
/// Values stay unresolved until they run, so `{".sv": "timestamp"}` takes the time of disconnection.
///
/// ```swift
/// var operations = DisconnectOperations()
/// operations.register(DisconnectOperation(path: "users/ada/online", kind: .set(false)))
/// operations.cancel(below: "users/ada")   // cancels it: `oc` also cancels operations below the path
/// ```
public struct DisconnectOperations: Sendable {
    public private(set) var operations: [DisconnectOperation] = []

    public init() {}

    public var isEmpty: Bool { operations.isEmpty }

    /// Adds an operation; it runs after every operation registered before it.
    public mutating func register(_ operation: DisconnectOperation) {
        operations.append(operation)
    }

    /// Removes every operation at or below `path`.
    public mutating func cancel(below path: Path) {
        operations.removeAll { path.contains($0.path) }
    }

    /// Hands over the operations to run, leaving none registered.
    public mutating func takeAll() -> [DisconnectOperation] {
        defer { operations = [] }
        return operations
    }
}
