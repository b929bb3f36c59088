import ProcessResources

extension FileLimit {
    /// Raises the open-file limit so that one side of a storm of `clients` fits (a descriptor per
    /// client and a margin), or throws what it needs.
    static func raise(forClients clients: Int) throws(StormError) {
        let needed = UInt64(clients + 256)
        let limit = raise(toAtLeast: needed)
        guard limit >= needed else { throw .fileLimit(needed: needed, limit: limit) }
    }
}
