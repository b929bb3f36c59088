import Query
import Testing
import Tree

/// The query objects below are what the official clients send for the same calls.
struct QueryParamsWireTests: QueryParamsFixtures {
    typealias Bound = QueryParams.Bound

    /// Checks that `params` goes on the wire as `wire` and reads back from it.
    private func expectWire(
        _ params: QueryParams, _ wire: JSONValue, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(params.wireObject == wire, sourceLocation: sourceLocation)
        #expect(try QueryParams(wireObject: wire) == params, sourceLocation: sourceLocation)
    }

    @Test func childStartAtLimitToLast() throws {
        let params = try QueryParams().ordered(by: .child("height")).starting(at: number(3)).limited(toLast: 2)
        try expectWire(params, ["i": "height", "sp": 3, "sin": true, "l": 2, "vf": "r"])
        #expect(params.queryIdentifier == #"{"i":"height","l":2,"sin":true,"sp":3,"vf":"r"}"#)
    }

    @Test func equalToNull() throws {
        try expectWire(try QueryParams().equal(to: .empty), ["sp": nil, "sin": true, "ep": nil, "ein": true])
        try expectWire(
            try QueryParams().ordered(by: .child("a/b")).equal(to: .empty),
            ["sp": nil, "sin": true, "ep": nil, "ein": true, "i": "a/b"])
    }

    @Test func startAfterSendsTheMaxName() throws {
        try expectWire(
            try QueryParams().ordered(by: .child("height")).starting(after: number(5)),
            ["sp": 5, "sn": "[MAX_NAME]", "sin": false, "i": "height"])
        try expectWire(try QueryParams().starting(after: number(5)), ["sp": 5, "sn": "[MAX_NAME]", "sin": false])
        try expectWire(
            try QueryParams().ordered(by: .value).starting(after: number(5), key: "k"),
            ["sp": 5, "sn": "k", "sin": false, "i": ".value"])
    }

    @Test func keyStartAfterSendsTheKey() throws {
        try expectWire(
            try QueryParams().ordered(by: .key).starting(after: string("b")), ["sp": "b", "sin": false, "i": ".key"])
    }

    @Test func endBeforeSendsTheMinName() throws {
        try expectWire(
            try QueryParams().ordered(by: .value).ending(before: number(10)),
            ["ep": 10, "en": "[MIN_NAME]", "ein": false, "i": ".value"])
        try expectWire(
            try QueryParams().ordered(by: .key).ending(before: string("m")), ["ep": "m", "ein": false, "i": ".key"])
    }

    @Test func limitToFirst() throws {
        try expectWire(try QueryParams().limited(toFirst: 3), ["l": 3, "vf": "l"])
        try expectWire(try QueryParams().ordered(by: .key).limited(toFirst: 1), ["l": 1, "vf": "l", "i": ".key"])
    }

    @Test func orderByValue() throws {
        let ordered = try QueryParams().ordered(by: .value)
        #expect(ordered.wireObject == nil)
        try expectWire(try ordered.limited(toLast: 4), ["l": 4, "vf": "r", "i": ".value"])
        try expectWire(try ordered.ending(at: boolean(true)), ["ep": true, "ein": true, "i": ".value"])
    }

    @Test func orderByPriorityWithBounds() throws {
        try expectWire(try QueryParams().starting(at: string("p")), ["sp": "p", "sin": true])
        try expectWire(
            try QueryParams().starting(at: number(1), key: "k").ending(at: number(2)),
            ["sp": 1, "sn": "k", "sin": true, "ep": 2, "ein": true])
    }

    @Test func queriesThatLoadAllDataAreSentPlain() throws {
        #expect(QueryParams.default.wireObject == nil)
        #expect(try QueryParams().ordered(by: .key).wireObject == nil)
        #expect(try QueryParams().ordered(by: .child("a")).wireObject == nil)
    }

    @Test func absentObjectsAreTheDefault() throws {
        #expect(try QueryParams(wireObject: nil) == .default)
        #expect(try QueryParams(wireObject: .null) == .default)
        #expect(try QueryParams(wireObject: [:]) == .default)
        #expect(try QueryParams(wireObject: ["i": ".priority"]) == .default)
    }

    @Test func olderClientsOmitFlagsAndViewFrom() throws {
        let inclusive = try QueryParams(wireObject: ["sp": 5, "sn": "[MAX_NAME]", "i": "h"])
        #expect(inclusive.start == Bound(value: number(5), name: .max, inclusive: true))
        #expect(try QueryParams(wireObject: ["l": 2]).limit == .last(2))
        #expect(try QueryParams(wireObject: ["l": 2, "sp": 1]).limit == .first(2))
        #expect(try QueryParams(wireObject: ["l": 2, "ep": 1]).limit == .last(2))
    }

    @Test func malformedObjectsAreRejected() {
        let malformed: [JSONValue] = [
            "x", 3, [1, 2], ["x": 1], ["sp": [1]], ["sp": ["a": 1]], ["sn": "a"], ["sin": true], ["en": "a"],
            ["ein": false], ["sp": 1, "sn": 2], ["sp": 1, "sin": "no"], ["ep": 1, "ein": 0], ["l": 2.5], ["l": "2"],
            ["l": 2, "vf": "x"], ["l": 2, "vf": 1], ["vf": "l"], ["i": 3], ["i": ""], ["i": "a/$b"], ["l": 1e300],
        ]
        for object in malformed {
            let error = queryError { try QueryParams(wireObject: object) }
            #expect(error != nil, "\(object.serialized()) was accepted")
        }
        #expect(throws: QueryError.invalidLimit(-1)) { try QueryParams(wireObject: ["l": -1]) }
        #expect(throws: QueryError.invalidLimit(0)) { try QueryParams(wireObject: ["l": 0, "vf": "l"]) }
        #expect(throws: QueryError.invalidWireObject("unknown key \"x\"")) { try QueryParams(wireObject: ["x": 1]) }
        #expect(throws: QueryError.invalidWireObject("vf must be \"l\" or \"r\", got \"x\"")) {
            try QueryParams(wireObject: ["l": 2, "vf": "x"])
        }
        #expect(throws: QueryError.invalidWireObject("l must be a positive integer, got 2.5")) {
            try QueryParams(wireObject: ["l": 2.5])
        }
    }

    @Test func boundsAreCheckedAgainstTheIndex() {
        #expect(rejectsBound { try QueryParams(wireObject: ["i": ".key", "sp": 3]) })
        #expect(rejectsBound { try QueryParams(wireObject: ["i": ".key", "sp": "a", "sn": "b"]) })
        #expect(rejectsBound { try QueryParams(wireObject: ["ep": true]) })
    }

    @Test func identifiersAreCanonical() throws {
        #expect(QueryParams.default.queryIdentifier == "default")
        let startAfter = try QueryParams().ordered(by: .child("h")).starting(after: number(5))
        // An older client sends startAfter as an inclusive start at the max name: the same children.
        let older = try QueryParams(wireObject: ["i": "h", "sp": 5, "sn": "[MAX_NAME]"])
        #expect(older != startAfter)
        #expect(older.queryIdentifier == startAfter.queryIdentifier)
        // The min name is what an absent start name stands for.
        let startAt = try QueryParams().ordered(by: .child("h")).starting(at: number(5))
        let minNamed = try QueryParams(wireObject: ["i": "h", "sp": 5, "sn": "[MIN_NAME]", "sin": false])
        #expect(minNamed.queryIdentifier == startAt.queryIdentifier)
        let maxNamedEnd = try QueryParams(wireObject: ["i": "h", "ep": 5, "en": "[MAX_NAME]", "ein": true])
        #expect(
            maxNamedEnd.queryIdentifier
                == (try QueryParams().ordered(by: .child("h")).ending(at: number(5))).queryIdentifier)
        // Numbers are spelled one way.
        #expect(try QueryParams(wireObject: ["sp": 3.0, "sin": true]).queryIdentifier == #"{"sin":true,"sp":3}"#)
    }

    @Test func identifiersTellQueriesApart() throws {
        let base = try QueryParams().ordered(by: .child("h"))
        let identifiers = [
            QueryParams.default.queryIdentifier,
            try QueryParams().ordered(by: .value).queryIdentifier,
            try QueryParams().ordered(by: .key).queryIdentifier,
            base.queryIdentifier,
            try base.starting(at: number(1)).queryIdentifier,
            try base.starting(at: number(2)).queryIdentifier,
            try base.starting(at: string("1")).queryIdentifier,
            try base.starting(after: number(1)).queryIdentifier,
            try base.starting(at: number(1), key: "k").queryIdentifier,
            try base.ending(at: number(1)).queryIdentifier,
            try base.equal(to: number(1)).queryIdentifier,
            try base.limited(toFirst: 2).queryIdentifier,
            try base.limited(toLast: 2).queryIdentifier,
            try base.limited(toLast: 3).queryIdentifier,
        ]
        #expect(Set(identifiers).count == identifiers.count)
        #expect(
            try base.equal(to: number(1)).queryIdentifier
                == base.starting(at: number(1)).ending(at: number(1)).queryIdentifier)
    }
}
