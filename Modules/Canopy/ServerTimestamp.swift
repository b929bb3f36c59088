public import Foundation

/// An optional `Date` the server fills in (Firebase's `@ServerTimestamp`): written while `nil`, it
/// is sent as ``ServerValue/timestamp()`` and the server stores its time, in milliseconds since
/// 1970; a `Date` is written as those milliseconds, and read back from them.
///
/// ```swift
/// struct Post: Codable {
///     var title: String
///     @ServerTimestamp var createdAt: Date?
/// }
/// try ref.setValue(from: Post(title: "Hello"))      // createdAt: the server's time
/// ```
///
/// A missing key decodes as `nil`, as it would for an optional property.
@propertyWrapper
public struct ServerTimestamp: Codable, Equatable, Hashable, Sendable {
    public var wrappedValue: Date?

    public init(wrappedValue: Date?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            wrappedValue = nil
        } else {
            wrappedValue = Date(timeIntervalSince1970: try container.decode(Double.self) / 1000)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(Int64(wrappedValue.timeIntervalSince1970 * 1000))
        } else {
            try container.encode([".sv": "timestamp"])
        }
    }
}

extension KeyedDecodingContainer {
    /// A `@ServerTimestamp` property whose key is missing decodes as `nil`.
    public func decode(_ type: ServerTimestamp.Type, forKey key: Key) throws -> ServerTimestamp {
        try decodeIfPresent(type, forKey: key) ?? ServerTimestamp(wrappedValue: nil)
    }
}
