import Prometheus
import Transport
import Tree

extension Database {
    /// Runs `write` with a reply that also records how it ended under `id`, or, when write `id`
    /// already ran, answers as it was answered then without running it again. Without an `id` it
    /// just runs `write`.
    ///
    /// A resend that arrives while the first run is still being stored is answered after it, in
    /// commit order, with the same answer: `ok` once it is durable, its error if the store failed.
    func once(
        _ id: WriteID?, at path: Path, reply: @escaping @Sendable (WriteOutcome) -> Void,
        _ write: (_ reply: @escaping @Sendable (WriteOutcome) -> Void) -> Void
    ) {
        guard let id else {
            write(reply)
            return
        }
        let applied = appliedWrites
        if applied.disposition(of: id) != nil {
            metrics.resentWrites.increment()
            let current = root.child(at: path)
            inCommitOrder {
                switch applied.disposition(of: id) ?? .applied {
                case .applied: reply(.ok(value: current))
                case .refused(let error): reply(.rejected(error))
                case .stale: reply(.datastale(current: current))
                }
            }
            return
        }
        // Provisional until the write is answered; a resend answered meanwhile waits for that answer.
        applied.record(id, .applied)
        write { outcome in
            switch outcome {
            case .ok: break
            case .datastale: applied.record(id, .stale)
            case .rejected(let error): applied.record(id, .refused(error))
            }
            reply(outcome)
        }
    }
}
