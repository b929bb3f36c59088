import Tree

/// What a store keeps of the writes one client named with write ids, so that a write resent after
/// the process died (its commit landed, its answer was lost) is answered as it was the first time
/// instead of being applied again: the server's memory of them (`AppliedWrites`) as of the last
/// commit that touched the client.
///
/// Every write of ``client`` numbered at or below ``highest`` ran; it was applied unless
/// ``notApplied`` holds how it ended.
///
/// ```swift
/// let ids = StoredWriteIDs(client: "b1f0…", highest: 7, notApplied: [5: .stale], seen: 1_700_000_000_000)
/// try store.commit(writes, disconnects: [], writeIDs: [.store(ids)])   // in the writes' transaction
/// try store.storedWriteIDs()                                           // [ids], at the next open
/// ```
public struct StoredWriteIDs: Sendable, Equatable {
    /// How a named write that was not applied ended.
    public enum NotApplied: Sendable, Equatable {
        /// Refused before anything changed, with this status and message.
        case refused(status: String, message: String)
        /// A compare-and-set that found other data.
        case stale
    }

    public var client: String
    /// The highest write number of ``client`` that ran.
    public var highest: Int
    /// The writes at or below ``highest`` that were not applied, by number.
    public var notApplied: [Int: NotApplied]
    /// When the client was last seen, in milliseconds since 1970: the least recently seen clients
    /// are forgotten first.
    public var seen: Int64

    public init(client: String, highest: Int, notApplied: [Int: NotApplied] = [:], seen: Int64) {
        self.client = client
        self.highest = highest
        self.notApplied = notApplied
        self.seen = seen
    }
}

/// A change to the stored write ids, committed in the same transaction as the writes it is
/// submitted with (see ``ServerStore/commit(_:disconnects:writeIDs:)``).
public enum WriteIDChange: Sendable, Equatable {
    /// Stores (or replaces) what is kept of a client's writes.
    case store(StoredWriteIDs)
    /// Forgets a client (the least recently seen go when there are too many).
    case forget(client: String)

    public var client: String {
        switch self {
        case .store(let ids): ids.client
        case .forget(let client): client
        }
    }

    /// The last change of each client in `changes`, in the order of those last changes: what
    /// applying all of them in order leaves.
    public static func latest(_ changes: [WriteIDChange]) -> [WriteIDChange] {
        var last: [String: Int] = [:]
        last.reserveCapacity(changes.count)
        for (offset, change) in changes.enumerated() { last[change.client] = offset }
        if last.count == changes.count { return changes }
        return changes.indices.filter { last[changes[$0].client] == $0 }.map { changes[$0] }
    }
}

extension StoredWriteIDs {
    /// ``notApplied`` as the JSON text the stores keep (`{"5":"stale","6":{"status":…,"message":…}}`),
    /// `nil` when empty.
    public var notAppliedText: String? {
        guard !notApplied.isEmpty else { return nil }
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(notApplied.count)
        for (sequence, outcome) in notApplied {
            members[String(sequence)] =
                switch outcome {
                case .stale: .string("stale")
                case .refused(let status, let message): ["status": .string(status), "message": .string(message)]
                }
        }
        return JSONValue.object(members).serialized()
    }

    /// Reads ``notAppliedText``; throws a description of what is wrong with `text`.
    public static func notApplied(parsing text: String?) throws(WriteIDsFormatError) -> [Int: NotApplied] {
        guard let text else { return [:] }
        guard case .object(let members)? = try? JSONValue(parsing: text) else {
            throw WriteIDsFormatError(reason: "not a JSON object: \(text.prefix(80))")
        }
        var notApplied: [Int: NotApplied] = [:]
        notApplied.reserveCapacity(members.count)
        for (key, value) in members {
            guard let sequence = Int(key) else { throw WriteIDsFormatError(reason: "\"\(key)\" is not a number") }
            switch value {
            case .string("stale"): notApplied[sequence] = .stale
            case .object(let fields):
                guard case .string(let status)? = fields["status"], case .string(let message)? = fields["message"]
                else { throw WriteIDsFormatError(reason: "write \(key) has no status and message") }
                notApplied[sequence] = .refused(status: status, message: message)
            default: throw WriteIDsFormatError(reason: "write \(key) has an unknown outcome")
            }
        }
        return notApplied
    }
}

/// Stored write ids that do not read back (see ``StoredWriteIDs/notApplied(parsing:)``).
public struct WriteIDsFormatError: Error, Sendable, CustomStringConvertible {
    public var reason: String

    public var description: String { "unreadable write ids: \(reason)" }
}
