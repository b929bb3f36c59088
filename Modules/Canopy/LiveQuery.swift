#if canImport(Observation)
public import Observation
import Synchronization

/// A query's live value decoded as `Value`, as an `@Observable` model for an app's views: it
/// listens from its creation until ``stop()`` (or until it is released), and changes its
/// properties on the main actor, where views read them.
///
/// ```swift
/// struct Room: Decodable { var topic: String }
///
/// @MainActor final class RoomScreen {
///     let room = LiveQuery<Room>(Database.database().reference(withPath: "rooms/a"))
///
///     func render() {
///         title = room.value?.topic ?? "…"
///         savingBadge.isHidden = !room.metadata.hasPendingWrites
///     }
/// }
/// ```
///
/// In SwiftUI, hold it in `@State` (or use the `@LiveValue` property wrapper, on Apple platforms):
/// a view that reads ``value`` is drawn again when it changes. Everywhere else,
/// `withObservationTracking` tells when to read again.
@MainActor
@Observable
public final class LiveQuery<Value: Decodable> {
    /// What the latest snapshot decodes to; `nil` before the first one, where there is no data,
    /// and when decoding failed (then ``error`` says why).
    public private(set) var value: Value?
    /// The latest snapshot, `nil` before the first.
    public private(set) var snapshot: DataSnapshot?
    /// What the latest snapshot rests on: from the device's cache until the server answered,
    /// with local writes the server has not acknowledged yet. It changes on its own when only
    /// that changes (the model listens with `includeMetadataChanges`).
    public private(set) var metadata = SnapshotMetadata(isFromCache: true, hasPendingWrites: false)
    /// Why ``value`` is `nil` although there is data (a `DecodingError`), or why the server ended
    /// the listen (a `permission_denied` ``DatabaseError/server(status:message:)``, which also
    /// stops the model).
    public private(set) var error: (any Error)?
    /// Whether the model listens.
    public private(set) var isListening = false

    /// The query listened to.
    @ObservationIgnored public let query: DatabaseQuery
    @ObservationIgnored private let decoder: Database.Decoder
    @ObservationIgnored private let registration = Registration()

    /// Starts listening to `query` at once.
    public init(_ query: DatabaseQuery, decoder: Database.Decoder = Database.Decoder()) {
        self.query = query
        self.decoder = decoder
        start()
    }

    /// Listens again after ``stop()`` or after the server ended the listen; does nothing while
    /// listening.
    public func start() {
        guard !isListening else { return }
        isListening = true
        error = nil
        let handle = query.observe(
            .value, includeMetadataChanges: true,
            with: { [weak self] snapshot in self?.apply(snapshot) },
            withCancel: { [weak self] error in self?.ended(by: error) })
        registration.replace(with: (query, handle))
    }

    /// Stops listening; the properties keep their last values.
    public func stop() {
        registration.replace(with: nil)
        isListening = false
    }

    private func apply(_ snapshot: DataSnapshot) {
        self.snapshot = snapshot
        metadata = snapshot.metadata
        guard snapshot.exists() else {
            value = nil
            error = nil
            return
        }
        do {
            value = try snapshot.data(as: Value.self, decoder: decoder)
            error = nil
        } catch {
            value = nil
            self.error = error
        }
    }

    private func ended(by error: any Error) {
        self.error = error
        registration.replace(with: nil)
        isListening = false
    }

}

/// The listener a ``LiveQuery`` holds, removed when it is replaced, or when the model is released
/// (only the model holds it, and its deinit may run on any thread).
private final class Registration: Sendable {
    private let listener = Mutex<(query: DatabaseQuery, handle: DatabaseHandle)?>(nil)

    func replace(with new: (query: DatabaseQuery, handle: DatabaseHandle)?) {
        let old = listener.withLock { current in
            defer { current = new }
            return current
        }
        if let old { old.query.removeObserver(withHandle: old.handle) }
    }

    deinit {
        if let old = listener.withLock({ $0 }) { old.query.removeObserver(withHandle: old.handle) }
    }
}
#endif
