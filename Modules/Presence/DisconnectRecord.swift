public import Tree

/// A connection's onDisconnect operations and the identity they run as: what runs when the
/// connection ends, and what a store shared by several processes keeps meanwhile.
///
/// ```swift
/// let record = DisconnectRecord(operations: [offline], identity: caller)
/// let stored = record.json     // {"operations": [{"p": "users/ada/online", "s": false}], "auth": {…}}
/// DisconnectRecord<Caller>(json: stored) == record   // true
/// ```
public struct DisconnectRecord<Identity: DisconnectIdentity>: Sendable, Equatable {
    /// In registration order.
    public var operations: [DisconnectOperation]
    public var identity: Identity

    public init(operations: [DisconnectOperation], identity: Identity) {
        self.operations = operations
        self.identity = identity
    }

    /// The record as a store keeps it: `{"operations": [...]}` with the identity's members.
    public var json: JSONValue {
        var members = identity.recordMembers
        members["operations"] = .array(operations.map(\.json))
        return .object(members)
    }

    /// Reads what ``json`` wrote; `nil` when it does not read.
    public init?(json: JSONValue) {
        guard case .object(let members) = json, case .array(let items)? = members["operations"] else { return nil }
        var operations: [DisconnectOperation] = []
        operations.reserveCapacity(items.count)
        for item in items {
            guard let operation = DisconnectOperation(json: item) else { return nil }
            operations.append(operation)
        }
        self.init(operations: operations, identity: Identity(recordMembers: members))
    }
}
