import ProcessResources

extension FileLimit {
    /// Throws when `connections` descriptors (plus a margin for files, pipes and the event loops)
    /// do not fit under the soft limit.
    static func check(connections: Int, what: String) throws(LoadError) {
        let soft = current.soft
        let needed = UInt64(connections) + 64
        guard soft >= needed else { throw LoadError.fileLimit(what: what, needed: needed, limit: soft) }
    }
}
