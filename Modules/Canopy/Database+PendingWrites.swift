extension Database {
    /// Returns once every write pending now is acknowledged or refused by the server (or
    /// canceled by ``purgeOutstandingWrites()``): the writes in ``pendingWrites``, including those
    /// restored from the device after a restart, and the transactions running. Writes made after
    /// the call are not waited for. Offline, it waits for the connection. Cancelling the waiting
    /// task ends the wait with `CancellationError`; the writes go on.
    ///
    /// ```swift
    /// ref.setValue("draft")
    /// try await database.waitForPendingWrites()   // the server has it (or refused it)
    /// ```
    public func waitForPendingWrites() async throws {
        guard let repo else { return }
        try await repo.waitForPendingWrites()
    }
}
