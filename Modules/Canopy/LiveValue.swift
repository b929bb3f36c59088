#if canImport(SwiftUI)
public import SwiftUI

/// A SwiftUI view's live, decoded value at a database location: a ``LiveQuery`` kept in the
/// view's state. The view is drawn again when the value or its metadata changes.
///
/// ```swift
/// struct RoomView: View {
///     @LiveValue("rooms/a") var room: Room?
///
///     var body: some View {
///         Text(room?.topic ?? "…")
///             .opacity($room.metadata.hasPendingWrites ? 0.5 : 1)
///     }
/// }
/// ```
///
/// Built only on Apple platforms (SwiftUI); the model under it is tested on Linux.
@MainActor
@propertyWrapper
public struct LiveValue<Value: Decodable>: DynamicProperty {
    @State private var model: LiveQuery<Value>

    /// Listens to `path` in `database` (the default database unless given).
    public init(_ path: String, in database: Database = .database(), decoder: Database.Decoder = Database.Decoder()) {
        self.init(database.reference(withPath: path), decoder: decoder)
    }

    /// Listens to `query`.
    public init(_ query: DatabaseQuery, decoder: Database.Decoder = Database.Decoder()) {
        // SwiftUI keeps the model of the view's first appearance; one made by a later init of the
        // same view is released at once, and its listener with it.
        _model = State(wrappedValue: LiveQuery(query, decoder: decoder))
    }

    /// The decoded value (see ``LiveQuery/value``).
    public var wrappedValue: Value? { model.value }

    /// The model itself, for its metadata, error and snapshot: `$room.metadata`.
    public var projectedValue: LiveQuery<Value> { model }
}
#endif
