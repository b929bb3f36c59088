import Query
import Tree

/// Shorthands for the query parameter tests, kept off the module's top level (other suites share it).
protocol QueryParamsFixtures {}

extension QueryParamsFixtures {
    func number(_ value: Double) -> Node { Node(.number(value)) }
    func string(_ value: String) -> Node { Node(.string(value)) }
    func boolean(_ value: Bool) -> Node { Node(.bool(value)) }

    /// A node with children, which no index accepts as a bound.
    var object: Node { Node(children: [(ChildKey("a"), Node(.number(1)))]) }

    /// The index and value of an `invalidBound` error, `nil` for any other outcome.
    func invalidBound(_ body: () throws -> QueryParams) -> (index: Index, value: JSONValue)? {
        guard case .invalidBound(let index, let value, _)? = queryError(body) else { return nil }
        return (index, value)
    }

    /// Whether `body` fails with an `invalidBound` error.
    func rejectsBound(_ body: () throws -> QueryParams) -> Bool { invalidBound(body) != nil }

    /// The error `body` throws, `nil` when it succeeds.
    func queryError<T>(_ body: () throws -> T) -> QueryError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? QueryError
        }
    }
}
