import PropertyBased
import Query
import Testing
import Tree

/// A query as a user would build it: which calls, with which arguments.
struct QuerySpec: Sendable, CustomStringConvertible {
    enum Start: Sendable { case at, after }
    enum End: Sendable { case at, before }

    var index: Index
    var start: (Start, Node, ChildKey?)?
    var end: (End, Node, ChildKey?)?
    var equal: (Node, ChildKey?)?
    var limit: QueryParams.Limit?

    func build() throws(QueryError) -> QueryParams {
        var params = try QueryParams().ordered(by: index)
        if let (kind, value, key) = start {
            params = try kind == .at ? params.starting(at: value, key: key) : params.starting(after: value, key: key)
        }
        if let (kind, value, key) = end {
            params = try kind == .at ? params.ending(at: value, key: key) : params.ending(before: value, key: key)
        }
        if let (value, key) = equal { params = try params.equal(to: value, key: key) }
        switch limit {
        case .first(let count): params = try params.limited(toFirst: count)
        case .last(let count): params = try params.limited(toLast: count)
        case nil: break
        }
        return params
    }

    var description: String { (try? build().description) ?? "invalid spec" }

    static let generator = Generator { rng in random(using: &rng) }

    static func random(using rng: inout some RandomNumberGenerator) -> QuerySpec {
        let indexes: [Index] = [.priority, .key, .value, .child("height"), .child("a/b")]
        let index = indexes.randomElement(using: &rng) ?? .priority
        func value() -> Node { randomValue(for: index, using: &rng) }
        func key() -> ChildKey? {
            guard index != .key, Bool.random(using: &rng) else { return nil }
            return ["a", "b", "1", "10", "k-2", "z z", "é"].randomElement(using: &rng).map { ChildKey($0) }
        }
        var spec = QuerySpec(index: index)
        if Int.random(in: 0..<4, using: &rng) == 0 {
            spec.equal = (value(), key())
        } else {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: spec.start = (.at, value(), key())
            case 1: spec.start = (.after, value(), key())
            default: break
            }
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: spec.end = (.at, value(), key())
            case 1: spec.end = (.before, value(), key())
            default: break
            }
        }
        let count = Int.random(in: 1...50, using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: spec.limit = .first(count)
        case 1: spec.limit = .last(count)
        default: break
        }
        return spec
    }

    private static func randomValue(for index: Index, using rng: inout some RandomNumberGenerator) -> Node {
        let strings = ["", "a", "b", "1", "\"quoted\"", "back\\slash", "comma,", "[MAX_NAME]", "ünï"]
        let stringValue = Node(.string(strings.randomElement(using: &rng) ?? "a"))
        if index == .key { return stringValue }
        switch Int.random(in: 0..<(index == .priority ? 4 : 5), using: &rng) {
        case 0: return stringValue
        case 1: return Node(.number(Double(Int.random(in: -5...5, using: &rng))))
        case 2: return Node(.number(Double(Int.random(in: -1000...1000, using: &rng)) / 7))
        case 3: return .empty
        default: return Node(.bool(Bool.random(using: &rng)))
        }
    }
}

struct QueryParamsRoundTripTests {
    @Test func wireObjectsRoundTrip() async {
        await propertyCheck(count: 500, input: QuerySpec.generator) { spec in
            let params = try spec.build()
            guard let wire = params.wireObject else {
                #expect(params.loadsAllData)
                return
            }
            #expect(!params.loadsAllData)
            // Through text, as the object travels.
            let received = try QueryParams(wireObject: JSONValue(parsing: wire.serialized()))
            #expect(received == params)
            #expect(received.queryIdentifier == params.queryIdentifier)
        }
    }

    @Test func restParametersRoundTrip() async {
        await propertyCheck(count: 500, input: QuerySpec.generator) { spec in
            let params = try spec.build()
            let received = try QueryParams(restParameters: params.restParameters)
            #expect(received == params)
            #expect(received.queryIdentifier == params.queryIdentifier)
        }
    }

    @Test func wireAndRESTAgree() async {
        await propertyCheck(count: 300, input: QuerySpec.generator) { spec in
            let params = try spec.build()
            guard let wire = params.wireObject else { return }
            let fromWire = try QueryParams(wireObject: wire)
            #expect(try QueryParams(restParameters: fromWire.restParameters) == params)
        }
    }

    @Test func identifiersMatchExactlyWhenParamsDo() async {
        await propertyCheck(count: 1000, input: QuerySpec.generator, QuerySpec.generator) { a, b in
            let (first, second) = (try a.build(), try b.build())
            #expect((first == second) == (first.queryIdentifier == second.queryIdentifier))
        }
    }
}
