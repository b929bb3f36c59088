import Synchronization

/// Requests the server answered with a status other than `ok` (`permission_denied`,
/// `too_many_listens`, …), counted by status: a load run must say what it could not do, never
/// count a refusal as work done.
final class Refusals: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// Counts one answer with `status`.
    func add(_ status: String) {
        counts.withLock { $0[status, default: 0] += 1 }
    }

    /// The counts by status.
    var byStatus: [String: Int] { counts.withLock { $0 } }

    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    /// `permission_denied 12, too_many_listens 3`: the most frequent first.
    static func describe(_ counts: [String: Int]) -> String {
        let ordered = counts.sorted { first, second in
            first.value != second.value ? first.value > second.value : first.key < second.key
        }
        return ordered.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
