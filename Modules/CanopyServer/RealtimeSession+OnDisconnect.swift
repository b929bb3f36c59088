import Presence
import Prometheus
import Transport
import Tree

/// `o`, `om` and `oc`: the session's onDisconnect operations, kept by its ``ConnectionPresence``.
extension RealtimeSession {
    /// Registers `operation` once the rules allow it (checked now as a write made now would be, and
    /// again when it runs) and it fits the session's bytes; where the store keeps the operations,
    /// it is stored before it is acknowledged.
    func registerDisconnect(_ operation: DisconnectOperation, request number: Int, database: Database) async {
        let answer = Self.answer(number, on: connection)
        guard await database.mayRegister(operation, as: caller) else { return answer(.rejected(.permissionDenied)) }
        do {
            try await presence.register(operation, limit: context.limits.maxOnDisconnectBytes, on: database)
        } catch {
            return answer(.rejected(refusal(error)))
        }
        connection.send(.ok(number))
    }

    /// Cancels the operations at or below `path`, stored as a registration is.
    func cancelDisconnect(below path: Path, request number: Int, database: Database) async {
        do {
            try await presence.cancel(below: path, on: database)
        } catch {
            return Self.answer(number, on: connection)(.rejected(refusal(error)))
        }
        connection.send(.ok(number))
    }

    /// What a client is told when a change to its onDisconnect operations was refused.
    private func refusal(_ error: DisconnectRefusal) -> WriteError {
        switch error {
        case .tooBig(let limit):
            context.metrics.tripped(.onDisconnectBytes)
            return WriteError(
                status: .tooBig,
                message: "the onDisconnect operations of this connection would hold more than \(limit) bytes")
        case .notStored:
            return WriteError(
                status: .storageError, message: "the onDisconnect operations could not be stored; try again")
        }
    }

    /// The onDisconnect operation an `o` or `om` action registers, or why it is refused; `nil` for
    /// other actions. Values are checked as a write there would be (server values resolve when it
    /// runs; here they only have to be well formed).
    static func disconnectOperation(for action: ClientAction) -> Result<DisconnectOperation, WriteError>? {
        let context = ServerValueContext(now: 0)
        do throws(TreeError) {
            switch action {
            case .onDisconnectPut(let text, let data):
                let path = try Path(validating: text)
                _ = try Node(json: data, at: path, serverValues: context)
                return .success(DisconnectOperation(path: path, kind: .set(data)))
            case .onDisconnectMerge(let text, let data):
                let path = try Path(validating: text)
                guard case .object(let members) = data else {
                    return .failure(.invalidData("an onDisconnect update must be an object of paths and values"))
                }
                _ = try Database.updateChildren(members, at: path) { absolute, value throws(TreeError) in
                    try Node(json: value, at: absolute, serverValues: context)
                }
                return .success(DisconnectOperation(path: path, kind: .update(members)))
            default:
                return nil
            }
        } catch {
            return .failure(.refused(error))
        }
    }
}
