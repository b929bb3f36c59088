public import Foundation
import Tree

extension Database {
    /// Turns snapshot values into `Decodable` values (Firebase's `Database.Decoder`), with the
    /// strategies `JSONDecoder` has for dates, data, non-finite numbers and keys.
    ///
    /// ```swift
    /// let decoder = Database.Decoder()
    /// decoder.keyDecodingStrategy = .convertFromSnakeCase
    /// let post = try snapshot.data(as: Post.self, decoder: decoder)
    /// ```
    public final class Decoder {
        public typealias DateDecodingStrategy = JSONDecoder.DateDecodingStrategy
        public typealias DataDecodingStrategy = JSONDecoder.DataDecodingStrategy
        public typealias NonConformingFloatDecodingStrategy = JSONDecoder.NonConformingFloatDecodingStrategy
        public typealias KeyDecodingStrategy = JSONDecoder.KeyDecodingStrategy

        /// How dates are read; `.deferredToDate` (seconds since 2001) by default.
        public var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
        /// How `Data` is read: from Base64 text by default.
        public var dataDecodingStrategy: DataDecodingStrategy = .base64
        /// Which strings stand for infinities and NaN: none, by default.
        public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
        /// How keys become property names: unchanged by default, or `.convertFromSnakeCase`, `.custom`.
        public var keyDecodingStrategy: KeyDecodingStrategy = .useDefaultKeys

        public init() {}

        /// Decodes `type` from `structure`, a value as ``DataSnapshot/value`` gives it (`NSNull`
        /// for none). Throws the `DecodingError` met (`valueNotFound` for no data and a
        /// non-optional `type`), or ``DatabaseError/invalidValue(_:reason:)`` for a structure that
        /// is not such a value.
        public func decode<T: Decodable>(_ type: T.Type, from structure: Any) throws -> T {
            try decode(type, fromJSON: AppValue.json(structure, at: "/"))
        }

        func decode<T: Decodable>(_ type: T.Type, fromJSON json: JSONValue) throws -> T {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = dateDecodingStrategy
            decoder.dataDecodingStrategy = dataDecodingStrategy
            decoder.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
            decoder.keyDecodingStrategy = keyDecodingStrategy
            return try decoder.decode(type, from: Data(json.serialized().utf8))
        }
    }
}
