public import Foundation
import Tree

extension Database {
    /// Turns `Encodable` values into the values ``DatabaseReference/setValue(_:)->WriteStatus`` takes
    /// (Firebase's `Database.Encoder`), with the strategies `JSONEncoder` has for dates, data,
    /// non-finite numbers and keys.
    ///
    /// ```swift
    /// let encoder = Database.Encoder()
    /// encoder.keyEncodingStrategy = .convertToSnakeCase
    /// encoder.dateEncodingStrategy = .millisecondsSince1970
    /// try ref.setValue(from: post, encoder: encoder)
    /// ```
    public final class Encoder {
        public typealias DateEncodingStrategy = JSONEncoder.DateEncodingStrategy
        public typealias DataEncodingStrategy = JSONEncoder.DataEncodingStrategy
        public typealias NonConformingFloatEncodingStrategy = JSONEncoder.NonConformingFloatEncodingStrategy
        public typealias KeyEncodingStrategy = JSONEncoder.KeyEncodingStrategy

        /// How dates are written: `.deferredToDate` (the default: seconds since 2001, as `Date`
        /// encodes itself), `.secondsSince1970`, `.millisecondsSince1970`, `.iso8601`, `.formatted`,
        /// `.custom`.
        public var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
        /// How `Data` is written: Base64 text by default.
        public var dataEncodingStrategy: DataEncodingStrategy = .base64
        /// What to do with infinities and NaN, which the database cannot store: throw, by default.
        public var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw
        /// How property names become keys: unchanged by default, or `.convertToSnakeCase`, `.custom`.
        public var keyEncodingStrategy: KeyEncodingStrategy = .useDefaultKeys

        public init() {}

        /// `value` as a value `setValue` takes: `[String: Any]`, `[Any]`, `String`, `Bool`, a number
        /// (`NSNumber`), or `NSNull` for nil. Throws the `EncodingError` the encoding met.
        public func encode<T: Encodable>(_ value: T) throws -> Any {
            AppValue.value(try json(value)) ?? NSNull()
        }

        /// `value` as JSON.
        func json<T: Encodable>(_ value: T) throws -> JSONValue {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = dateEncodingStrategy
            encoder.dataEncodingStrategy = dataEncodingStrategy
            encoder.nonConformingFloatEncodingStrategy = nonConformingFloatEncodingStrategy
            encoder.keyEncodingStrategy = keyEncodingStrategy
            return try JSONValue(parsing: encoder.encode(value))
        }
    }
}
