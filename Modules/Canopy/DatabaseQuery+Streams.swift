/// A child event with the key of the child before it in the query's order.
public struct ChildEvent: Sendable {
    public let type: DataEventType
    public let snapshot: DataSnapshot
    public let previousSiblingKey: String?
}

extension DatabaseQuery {
    /// The data, every time it changes, as an async sequence. The listen stops when the consuming
    /// task ends (or is cancelled); a refused listen ends the sequence with the error.
    ///
    /// ```swift
    /// for try await snapshot in Database.database().reference(withPath: "scores").values {
    ///     print(snapshot.value ?? "null")
    /// }
    /// ```
    public var values: AsyncThrowingStream<DataSnapshot, any Error> { values(includeMetadataChanges: false) }

    /// ``values``, also yielding a snapshot when only its ``DataSnapshot/metadata`` changes when
    /// `includeMetadataChanges` is set (see ``observe(_:includeMetadataChanges:with:withCancel:)``).
    ///
    /// ```swift
    /// for try await snapshot in ref.values(includeMetadataChanges: true) where !snapshot.metadata.isFromCache {
    ///     print("confirmed by the server:", snapshot.value ?? "null")
    /// }
    /// ```
    public func values(includeMetadataChanges: Bool) -> AsyncThrowingStream<DataSnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let handle = observe(
                .value, includeMetadataChanges: includeMetadataChanges, with: { continuation.yield($0) },
                withCancel: { continuation.finish(throwing: $0) })
            continuation.onTermination = { [self] _ in removeObserver(withHandle: handle) }
        }
    }

    /// Child events of the given types, in order, as an async sequence (see ``values``).
    public func events(of types: Set<DataEventType>) -> AsyncThrowingStream<ChildEvent, any Error> {
        events(of: types, includeMetadataChanges: false)
    }

    /// ``events(of:)``, with `.childChanged` also for a child whose metadata alone changed when
    /// `includeMetadataChanges` is set.
    public func events(
        of types: Set<DataEventType>, includeMetadataChanges: Bool
    ) -> AsyncThrowingStream<ChildEvent, any Error> {
        AsyncThrowingStream { continuation in
            var handles: [DatabaseHandle] = []
            for type in types.sorted(by: { $0.rawValue < $1.rawValue }) where type != .value {
                handles.append(
                    observe(
                        type, includeMetadataChanges: includeMetadataChanges,
                        andPreviousSiblingKeyWith: { snapshot, previous in
                            continuation.yield(ChildEvent(type: type, snapshot: snapshot, previousSiblingKey: previous))
                        }, withCancel: { continuation.finish(throwing: $0) }))
            }
            let registered = handles
            continuation.onTermination = { [self] _ in
                for handle in registered { removeObserver(withHandle: handle) }
            }
        }
    }
}
