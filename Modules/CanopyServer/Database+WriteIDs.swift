import Prometheus
import Transport
import Tree

extension Database {
    /// Runs `write` with a reply that also records how it ended under `id`, or, when write `id`
    /// already ran, answers as it was answered then without running it again. Without an `id` it
    /// just runs `write`. `write` returns at once how the write ended (see
    /// ``set(_:json:expectedHash:as:reply:)``).
    ///
    /// How it ended is recorded at once, and what is now remembered of the client commits with the
    /// writes of the turn (see ``perform(_:disconnects:)``), so a write and the record that it ran
    /// are durable together: after a crash the record is read back at open and a resend is
    /// answered from it.
    ///
    /// A resend that arrives while the first run is still being stored is answered after it, in
    /// commit order, with the same answer: `ok` once it is durable, its error if the store failed.
    func once(
        _ id: WriteID?, at path: Path, reply: @escaping @Sendable (WriteOutcome) -> Void,
        _ write: (_ reply: @escaping @Sendable (WriteOutcome) -> Void) -> AppliedWrites.Disposition
    ) {
        guard let id else {
            _ = write(reply)
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
        withinTurn {
            let disposition = write { outcome in
                // An applied write whose commit failed: a resend is answered with the failure.
                if case .rejected(let error) = outcome { applied.record(id, .refused(error)) }
                reply(outcome)
            }
            applied.record(id, disposition)
            ranNamedWrite(of: id.client)
        }
    }
}
