import Transport
import Tree

/// One step of ``Database/perform(_:disconnects:)``, run on the database: a client's put or merge
/// with its answer, or any other work.
///
/// A client's write is kept as its parts, not as a closure: a realtime connection makes one per
/// write it receives, and a closure's captures are an allocation. (A closure kept in an array costs
/// another, to wrap it in the array's calling convention; a struct is kept as it is.)
struct DatabaseWrite: Sendable {
    /// What a put or a merge does.
    enum Operation: Sendable {
        case set(JSONValue, expectedHash: String?)
        case update(JSONValue)
    }

    private enum Step: Sendable {
        case write(Operation, at: Path, writeID: WriteID?, caller: Caller, answer: @Sendable (WriteOutcome) -> Void)
        case run(@Sendable (isolated Database) -> Void)
    }

    private let step: Step

    /// `operation` at `path`, run once under `writeID` (see ``Database/once(_:at:reply:_:)``), its
    /// outcome handed to `answer`.
    init(
        _ operation: Operation, at path: Path, writeID: WriteID?, as caller: Caller,
        answer: @escaping @Sendable (WriteOutcome) -> Void
    ) {
        step = .write(operation, at: path, writeID: writeID, caller: caller, answer: answer)
    }

    /// Any other step.
    init(_ run: @escaping @Sendable (isolated Database) -> Void) {
        step = .run(run)
    }

    func callAsFunction(_ database: isolated Database) {
        switch step {
        case .run(let run):
            run(database)
        case .write(let operation, let path, let writeID, let caller, let answer):
            database.once(writeID, at: path, reply: answer) { reply in
                switch operation {
                case .set(let data, let expectedHash):
                    database.set(path, json: data, expectedHash: expectedHash, as: caller, reply: reply)
                case .update(let data):
                    database.update(path, json: data, as: caller, reply: reply)
                }
            }
        }
    }
}
