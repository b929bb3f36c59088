import Transport
import Tree

/// Puts and merges, as steps of ``Database/perform(_:disconnects:)``: the session hands the
/// consecutive writes of what it received to its database in one turn, so they commit together
/// and are answered in the order sent.
extension RealtimeSession {
    /// A put or merge as a step for ``Database/perform(_:disconnects:)``, answered on the
    /// session's connection; `nil` for other requests.
    func write(for request: ClientRequest) -> DatabaseWrite? {
        Self.write(
            for: request.action, writeID: request.writeID, as: caller,
            answer: Self.answer(request.number, on: connection))
    }

    /// A put or merge as a step for ``Database/perform(_:disconnects:)`` that hands its outcome to
    /// `answer`; `nil` for other actions. A put or merge at an invalid path becomes a step that
    /// refuses it. A write named by `writeID` that already ran is answered as it was then, not run
    /// again (see ``AppliedWrites``).
    static func write(
        for action: ClientAction, writeID: WriteID? = nil, as caller: Caller,
        answer: @escaping @Sendable (WriteOutcome) -> Void
    ) -> DatabaseWrite? {
        switch action {
        case .put(let text, let data, let hash):
            return step(at: text, .set(data, expectedHash: hash), writeID: writeID, as: caller, answer: answer)
        case .merge(let text, let data):
            return step(at: text, .update(data), writeID: writeID, as: caller, answer: answer)
        default:
            return nil
        }
    }

    /// The step that runs `operation` once at the path `text` names, or refuses an invalid path.
    private static func step(
        at text: String, _ operation: DatabaseWrite.Operation, writeID: WriteID?, as caller: Caller,
        answer: @escaping @Sendable (WriteOutcome) -> Void
    ) -> DatabaseWrite {
        let path: Path
        do throws(TreeError) {
            path = try Path(validating: text)
        } catch {
            return refusal(.invalidPath(error), answer: answer)
        }
        return DatabaseWrite(operation, at: path, writeID: writeID, as: caller, answer: answer)
    }

    /// A step that answers `error`, in commit order like every write's answer.
    private static func refusal(
        _ error: WriteError, answer: @escaping @Sendable (WriteOutcome) -> Void
    ) -> DatabaseWrite {
        DatabaseWrite { database in database.inCommitOrder { answer(.rejected(error)) } }
    }
}
