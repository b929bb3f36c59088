public import Foundation
import Tree

/// Placeholders the server fills in when it applies a write (Firebase's `ServerValue`).
///
/// ```swift
/// ref.child("lastOnline").onDisconnectSetValue(ServerValue.timestamp())
/// ref.child("visits").setValue(ServerValue.increment(1))
/// ```
public enum ServerValue {
    /// The server's time, in milliseconds since 1970, when the write is applied.
    public static func timestamp() -> [String: Any] { [".sv": "timestamp"] }

    /// Adds `delta` to the number stored at the location (a missing or non-number value counts
    /// as 0), atomically on the server.
    public static func increment(_ delta: Double) -> [String: Any] { [".sv": ["increment": delta]] }

    /// Adds `delta` to the number stored at the location.
    public static func increment(_ delta: Int) -> [String: Any] { [".sv": ["increment": delta]] }

    /// Adds `delta` to the number stored at the location (Firebase's form, for an `NSNumber`).
    public static func increment(_ delta: NSNumber) -> [String: Any] {
        let value = delta.doubleValue
        if value.rounded() == value, abs(value) < 9_007_199_254_740_992 { return increment(Int(delta.int64Value)) }
        return increment(value)
    }
}
