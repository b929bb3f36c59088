extension DatabaseQuery {
    /// ``observe(_:with:withCancel:)`` that, with `includeMetadataChanges`, is also called when
    /// only a snapshot's ``DataSnapshot/metadata`` changes (the server answered the listen, a
    /// pending write was acknowledged, the connection was lost): `.value` with the same data,
    /// `.childChanged` for each child whose metadata changed. The other child events never fire
    /// for metadata alone. Without it, it is ``observe(_:with:withCancel:)``.
    ///
    /// ```swift
    /// messages.observe(.value, includeMetadataChanges: true) { snapshot in
    ///     for case let message as DataSnapshot in snapshot.children {
    ///         print(message.key, message.metadata.hasPendingWrites ? "sending" : "sent")
    ///     }
    /// }
    /// ```
    @discardableResult
    public func observe(
        _ eventType: DataEventType, includeMetadataChanges: Bool,
        @_inheritActorContext with block: @escaping @isolated(any) @Sendable (DataSnapshot) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)? = nil
    ) -> DatabaseHandle {
        add(
            eventType, .snapshot(block), cancel: cancelBlock, once: false,
            includeMetadataChanges: includeMetadataChanges)
    }

    /// Child events with the key of the child before this one, and metadata changes as
    /// ``observe(_:includeMetadataChanges:with:withCancel:)`` has them.
    @discardableResult
    public func observe(
        _ eventType: DataEventType, includeMetadataChanges: Bool,
        @_inheritActorContext andPreviousSiblingKeyWith block:
            @escaping @isolated(any) @Sendable (DataSnapshot, String?) -> Void,
        @_inheritActorContext withCancel cancelBlock: (@isolated(any) @Sendable (any Error) -> Void)? = nil
    ) -> DatabaseHandle {
        add(
            eventType, .snapshotAndPreviousKey(block), cancel: cancelBlock, once: false,
            includeMetadataChanges: includeMetadataChanges)
    }
}
