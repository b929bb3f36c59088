import Synchronization

/// The answers to requests of one kind: `ok`, or refused with a status.
final class AnswerCounts: Sendable {
    let acknowledged = Atomic<Int>(0)
    let refusals = Refusals()

    /// Answers so far, `ok` or not.
    var answered: Int { acknowledged.load(ordering: .relaxed) + refusals.total }
}

/// A connection that sends requests from outside (the fan-out's writer, the window's writer) and
/// counts their answers.
final class AnswerCountingSession: LoadSession {
    private let counts: AnswerCounts

    init(counts: AnswerCounts) { self.counts = counts }

    func received(_ message: String, output: inout LoadOutput) {
        guard MessageText.responseNumber(message) != nil, let status = MessageText.status(message) else { return }
        if status == "ok" {
            counts.acknowledged.add(1, ordering: .relaxed)
        } else {
            counts.refusals.add(status)
        }
    }

    func closed() {}
}
