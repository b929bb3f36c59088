import Rules
import Tree

extension Database {
    /// `set(path, json)`, returning once the write is durable and its updates went out, or was
    /// refused; see ``set(_:json:expectedHash:as:reply:)``.
    ///
    /// ```swift
    /// let outcome = await database.set(Path("users/ada"), json: ["name": "Ada"], as: .admin)
    /// ```
    func set(_ path: Path, json: JSONValue, expectedHash: String? = nil, as caller: Caller) async -> WriteOutcome {
        await withCheckedContinuation { continuation in
            set(path, json: json, expectedHash: expectedHash, as: caller) { continuation.resume(returning: $0) }
        }
    }

    /// A multi-path update, returning once it is durable or was refused; see
    /// ``update(_:json:prepared:as:reply:)``.
    func update(
        _ path: Path, json: JSONValue, prepared: PreparedUpdate? = nil, as caller: Caller
    ) async -> WriteOutcome {
        await withCheckedContinuation { continuation in
            update(path, json: json, prepared: prepared, as: caller) { continuation.resume(returning: $0) }
        }
    }

    /// A multi-path update of members already built, returning once it is durable or was refused;
    /// see ``update(_:prepared:as:reply:)``.
    func update(_ path: Path, prepared: PreparedUpdate, as caller: Caller) async -> WriteOutcome {
        await withCheckedContinuation { continuation in
            update(path, prepared: prepared, as: caller) { continuation.resume(returning: $0) }
        }
    }
}
