public import Tree

/// A client's own name for one of its writes: Canopy's extension to the realtime protocol.
///
/// Sent with `p` and `m` requests as `"w": {"c": client, "n": sequence}` when the server's hello
/// lists ``RealtimeHello/writeIDsExtension``. A server that already applied the write answers a
/// resend of it without applying it again, so a write resent after a lost connection (whose
/// answer never arrived) is applied once. A client numbers its writes in the order it sends them.
///
/// ```swift
/// let request = ClientRequest(
///     number: 7, action: .put(path: "counter", data: ["increment": 1], hash: nil),
///     writeID: WriteID(client: "b1f0…", sequence: 3))
/// ```
public struct WriteID: Sendable, Hashable, CustomStringConvertible {
    /// Names the client, the same for all its writes (for example a random UUID per app run).
    public var client: String
    /// The write's number; a client's writes are numbered in the order they are first sent.
    public var sequence: Int

    public init(client: String, sequence: Int) {
        self.client = client
        self.sequence = sequence
    }

    /// The `w` member of a request body.
    public var json: JSONValue { ["c": .string(client), "n": .number(Double(sequence))] }

    /// Reads a `w` member; `nil` when it is not an object with a non-empty string `c` and an
    /// integer `n`.
    public init?(json: JSONValue) {
        guard case .string(let client)? = json["c"], !client.isEmpty, client.utf8.count <= 128,
            case .number(let raw)? = json["n"], let sequence = Int(exactly: raw), sequence >= 0
        else { return nil }
        self.init(client: client, sequence: sequence)
    }

    public var description: String { "\(client)#\(sequence)" }
}
