import Tree

/// The members of a multi-path update built into nodes before the update reaches its database
/// (see ``Database/prepareUpdate(_:json:)``), or why they cannot be written.
struct PreparedUpdate: Sendable {
    /// When the nodes were built (the time server values would resolve to).
    let context: ServerValueContext
    /// The members by path relative to the update's location, in path order.
    let children: Result<[(path: Path, node: Node)], TreeError>
}
