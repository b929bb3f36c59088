import Foundation
import Tree

/// Conversions between the values apps hand the SDK (`Any`, as Firebase's Apple SDK takes them)
/// and JSON.
enum AppValue {
    /// The JSON an app value spells: `nil`/`NSNull` → null, `Bool`, numbers (any integer or
    /// floating-point type, `NSNumber`), `String`, `[String: Any]` / `[AnyHashable: Any]` with string
    /// keys, `[Any]`. Throws ``DatabaseError/invalidValue(_:reason:)`` naming `path` for anything
    /// else (a `Date`, a custom type, a non-finite number).
    static func json(_ value: Any?, at path: String) throws(DatabaseError) -> JSONValue {
        guard let value else { return .null }
        switch value {
        case is NSNull: return .null
        case let bool as Bool: return .bool(bool)
        case let string as String: return .string(string)
        case let number as NSNumber: return try finite(number.doubleValue, at: path)
        case let int as Int: return .number(Double(int))
        case let int as Int8: return .number(Double(int))
        case let int as Int16: return .number(Double(int))
        case let int as Int32: return .number(Double(int))
        case let int as Int64: return .number(Double(int))
        case let int as UInt: return .number(Double(int))
        case let int as UInt8: return .number(Double(int))
        case let int as UInt16: return .number(Double(int))
        case let int as UInt32: return .number(Double(int))
        case let int as UInt64: return .number(Double(int))
        case let double as Double: return try finite(double, at: path)
        case let float as Float: return try finite(Double(float), at: path)
        case let dictionary as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, member) in dictionary { members[key] = try json(member, at: path + "/" + key) }
            return .object(members)
        case let dictionary as [AnyHashable: Any]:
            var members: [String: JSONValue] = [:]
            for (key, member) in dictionary {
                guard let name = key.base as? String else {
                    throw .invalidValue(path, reason: "a dictionary key is \(type(of: key.base)), not a String")
                }
                members[name] = try json(member, at: path + "/" + name)
            }
            return .object(members)
        case let array as [Any]:
            return .array(
                try array.enumerated().map { offset, element throws(DatabaseError) in
                    try json(element, at: path + "/\(offset)")
                })
        case let json as JSONValue:
            return json
        default:
            throw .invalidValue(
                path, reason: "\(type(of: value)) cannot be stored (use Bool, a number, String, arrays or dictionaries)"
            )
        }
    }

    private static func finite(_ value: Double, at path: String) throws(DatabaseError) -> JSONValue {
        guard value.isFinite else { throw .invalidValue(path, reason: "\(value) is not a finite number") }
        return .number(value)
    }

    /// The app value JSON reads as: `Bool`, numbers as `NSNumber` (so `as? Int`, `as? Double` and
    /// `as? TimeInterval` succeed whenever they represent the value exactly), `String`,
    /// `[String: Any]`, `[Any]` for array-like objects, `nil` for null.
    static func value(_ json: JSONValue) -> Any? {
        switch json {
        case .null: return nil
        case .bool(let bool): return bool
        case .number(let number):
            if number.rounded() == number, abs(number) < 9_007_199_254_740_992 { return NSNumber(value: Int64(number)) }
            return NSNumber(value: number)
        case .string(let string): return string
        case .array(let elements): return elements.map { value($0) ?? NSNull() }
        case .object(let members): return members.compactMapValues { value($0) }
        }
    }
}
