public import Tree

/// A write registered to run when a connection goes away.
public struct DisconnectOperation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `onDisconnect().set(data)`.
        case set(JSONValue)
        /// `onDisconnect().update(data)`: child paths relative to the location.
        case update([String: JSONValue])
    }

    public let path: Path
    public let kind: Kind
    /// What the operation holds, in bytes: its path and its value(s) as JSON text.
    public let byteCount: Int

    public init(path: Path, kind: Kind) {
        self.path = path
        self.kind = kind
        let values =
            switch kind {
            case .set(let value): value.serialized().utf8.count
            case .update(let members):
                members.reduce(0) { $0 + $1.key.utf8.count + $1.value.serialized().utf8.count }
            }
        byteCount = path.description.utf8.count + values
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
    /// The sum of the operations' ``DisconnectOperation/byteCount``.
    public private(set) var byteCount = 0

    public init() {}

    public var isEmpty: Bool { operations.isEmpty }

    /// Adds an operation; it runs after every operation registered before it.
    public mutating func register(_ operation: DisconnectOperation) {
        operations.append(operation)
        byteCount += operation.byteCount
    }

    /// Removes every operation at or below `path`.
    public mutating func cancel(below path: Path) {
        operations.removeAll { path.contains($0.path) }
        byteCount = operations.reduce(0) { $0 + $1.byteCount }
    }

    /// Hands over the operations to run, leaving none registered.
    public mutating func takeAll() -> [DisconnectOperation] {
        defer {
            operations = []
            byteCount = 0
        }
        return operations
    }
}
