import Query
import Testing
import Tree

struct QueryParamsBuilderTests: QueryParamsFixtures {
    typealias Bound = QueryParams.Bound

    @Test func chainsLikeTheOfficialSDK() throws {
        let params = try QueryParams().ordered(by: .child("height")).starting(at: number(3)).limited(toLast: 2)
        #expect(params.index == .child("height"))
        #expect(params.start == Bound(value: number(3)))
        #expect(params.end == nil)
        #expect(params.limit == .last(2))
    }

    @Test func limitMayBeSetOnce() {
        #expect(throws: QueryError.limitAlreadySet) { try QueryParams().limited(toFirst: 2).limited(toLast: 3) }
        #expect(throws: QueryError.limitAlreadySet) { try QueryParams().limited(toFirst: 2).limited(toFirst: 3) }
        #expect(throws: QueryError.limitAlreadySet) { try QueryParams().limited(toLast: 2).limited(toFirst: 3) }
    }

    @Test(arguments: [0, -1, Int.min])
    func limitMustBePositive(count: Int) {
        #expect(throws: QueryError.invalidLimit(count)) { try QueryParams().limited(toFirst: count) }
        #expect(throws: QueryError.invalidLimit(count)) { try QueryParams().limited(toLast: count) }
    }

    @Test func equalToConflictsWithEarlierBounds() {
        #expect(throws: QueryError.conflictingBounds("equalTo cannot be combined with startAt")) {
            try QueryParams().starting(at: number(1)).equal(to: number(2))
        }
        #expect(throws: QueryError.conflictingBounds("equalTo cannot be combined with startAfter")) {
            try QueryParams().starting(after: number(1)).equal(to: number(2))
        }
        #expect(throws: QueryError.conflictingBounds("equalTo cannot be combined with endAt")) {
            try QueryParams().ending(at: number(1)).equal(to: number(2))
        }
        #expect(throws: QueryError.conflictingBounds("equalTo cannot be combined with endBefore")) {
            try QueryParams().ending(before: number(1)).equal(to: number(2))
        }
    }

    @Test func boundsConflictWithAnEarlierEqualTo() {
        let equal = QueryError.conflictingBounds(
            "startAt cannot be combined with an earlier startAt, startAfter or equalTo")
        #expect(throws: equal) { try QueryParams().equal(to: number(2)).starting(at: number(1)) }
        #expect(throws: QueryError.self) { try QueryParams().equal(to: number(2)).starting(after: number(1)) }
        #expect(throws: QueryError.self) { try QueryParams().equal(to: number(2)).ending(at: number(3)) }
        #expect(throws: QueryError.self) { try QueryParams().equal(to: number(2)).ending(before: number(3)) }
        #expect(throws: QueryError.self) { try QueryParams().equal(to: number(2)).equal(to: number(2)) }
    }

    @Test func startAndEndMayBeSetOnce() {
        #expect(
            throws: QueryError.conflictingBounds(
                "startAfter cannot be combined with an earlier startAt, startAfter or equalTo")
        ) {
            try QueryParams().starting(at: number(1)).starting(after: number(2))
        }
        #expect(throws: QueryError.self) { try QueryParams().starting(after: number(1)).starting(at: number(2)) }
        #expect(
            throws: QueryError.conflictingBounds("endAt cannot be combined with an earlier endAt, endBefore or equalTo")
        ) {
            try QueryParams().ending(before: number(1)).ending(at: number(2))
        }
        #expect(throws: QueryError.self) { try QueryParams().ending(at: number(1)).ending(at: number(2)) }
    }

    @Test func startAndEndCombine() throws {
        let params = try QueryParams().ordered(by: .value).starting(at: number(1)).ending(before: number(5))
            .limited(toFirst: 3)
        #expect(params.start == Bound(value: number(1)))
        #expect(params.end == Bound(value: number(5), name: .min, inclusive: false))
    }

    @Test func orderByKeyNeedsStringBounds() {
        for bound in [number(3), boolean(true), Node.empty, object] {
            #expect(invalidBound { try QueryParams().ordered(by: .key).starting(at: bound) }?.index == .key)
            #expect(rejectsBound { try QueryParams().ordered(by: .key).ending(at: bound) })
            #expect(rejectsBound { try QueryParams().ordered(by: .key).equal(to: bound) })
            #expect(rejectsBound { try QueryParams().ordered(by: .key).starting(after: bound) })
            #expect(rejectsBound { try QueryParams().ordered(by: .key).ending(before: bound) })
        }
    }

    @Test func orderByKeyTakesNoKeyName() {
        let failed = invalidBound { try QueryParams().ordered(by: .key).starting(at: string("b"), key: "c") }
        #expect(failed?.index == .key)
        #expect(failed?.value == .string("b"))
        #expect(rejectsBound { try QueryParams().ordered(by: .key).ending(before: string("b"), key: "c") })
        #expect(rejectsBound { try QueryParams().ordered(by: .key).equal(to: string("b"), key: "c") })
    }

    @Test func orderingIsCheckedAgainstEarlierBounds() {
        // The official SDKs check the whole query after each call, so the order of calls does not matter.
        #expect(rejectsBound { try QueryParams().starting(at: number(3)).ordered(by: .key) })
        #expect(rejectsBound { try QueryParams().starting(after: string("b")).ordered(by: .key) })
        #expect(rejectsBound { try QueryParams().ending(at: string("b"), key: "k").ordered(by: .key) })
        #expect(!rejectsBound { try QueryParams().starting(after: number(3)).ordered(by: .child("h")) })
    }

    @Test func orderByPriorityNeedsNullNumberOrString() throws {
        #expect(invalidBound { try QueryParams().starting(at: boolean(false)) }?.index == .priority)
        #expect(rejectsBound { try QueryParams().ending(at: object) })
        #expect(rejectsBound { try QueryParams().equal(to: boolean(true)) })
        _ = try QueryParams().starting(at: .empty).ending(at: number(2))
        _ = try QueryParams().starting(at: string("a"), key: "k").ending(before: string("z"))
    }

    @Test func valueAndChildIndexesRejectObjects() throws {
        #expect(rejectsBound { try QueryParams().ordered(by: .value).starting(at: object) })
        #expect(rejectsBound { try QueryParams().ordered(by: .child("a")).equal(to: object) })
        _ = try QueryParams().ordered(by: .value).starting(at: boolean(true)).ending(at: string("x"))
        _ = try QueryParams().ordered(by: .child("a/b")).equal(to: .empty)
    }

    @Test func numberBoundsMustBeFinite() {
        #expect(rejectsBound { try QueryParams().ordered(by: .value).starting(at: number(.nan)) })
        #expect(rejectsBound { try QueryParams().ending(at: number(.infinity)) })
    }

    @Test func keyNamesMustBeDataKeys() {
        for key: ChildKey in [.max, .min, "a.b", ".priority", "a/b", ""] {
            #expect(rejectsBound { try QueryParams().starting(at: number(1), key: key) })
            #expect(rejectsBound { try QueryParams().ending(before: number(1), key: key) })
        }
    }

    @Test func indexMayBeSetOnce() throws {
        #expect(throws: QueryError.indexAlreadySet) { try QueryParams().ordered(by: .key).ordered(by: .value) }
        #expect(throws: QueryError.indexAlreadySet) {
            try QueryParams().ordered(by: .child("a")).ordered(by: .child("a"))
        }
        #expect(throws: QueryError.indexAlreadySet) { try QueryParams().ordered(by: .value).ordered(by: .priority) }
        // An explicit priority ordering cannot be told from the default one.
        #expect(try QueryParams().ordered(by: .priority).ordered(by: .key).index == .key)
    }

    @Test func childPathsMustBeUsable() {
        #expect(
            throws: QueryError.invalidIndex(
                "", reason: "the child path is empty; order by value to use the children themselves")
        ) {
            try QueryParams().ordered(by: .child(.root))
        }
        #expect(throws: QueryError.self) { try QueryParams().ordered(by: .child("a/$b")) }
        #expect(throws: QueryError.self) { try QueryParams().ordered(by: .child(Path(keys: [ChildKey.max]))) }
    }

    @Test func startAfterAndEndBeforeUseSentinelsOffTheKeyIndex() throws {
        let child = try QueryParams().ordered(by: .child("height"))
        #expect(try child.starting(after: number(5)).start == Bound(value: number(5), name: .max, inclusive: false))
        #expect(try child.ending(before: number(5)).end == Bound(value: number(5), name: .min, inclusive: false))
        #expect(
            try child.starting(after: number(5), key: "k").start == Bound(value: number(5), name: "k", inclusive: false)
        )
        #expect(
            try child.ending(before: number(5), key: "k").end == Bound(value: number(5), name: "k", inclusive: false))
        #expect(try QueryParams().starting(after: .empty).start == Bound(value: .empty, name: .max, inclusive: false))
    }

    @Test func startAfterAndEndBeforeOnTheKeyIndexNameTheKey() throws {
        let keys = try QueryParams().ordered(by: .key)
        #expect(try keys.starting(after: string("b")).start == Bound(value: string("b"), name: nil, inclusive: false))
        #expect(try keys.ending(before: string("b")).end == Bound(value: string("b"), name: nil, inclusive: false))
    }

    @Test func equalToSetsBothBounds() throws {
        let plain = try QueryParams().ordered(by: .child("a")).equal(to: number(3))
        #expect(plain.start == Bound(value: number(3)))
        #expect(plain.end == plain.start)
        let named = try QueryParams().equal(to: string("p"), key: "k")
        #expect(named.start == Bound(value: string("p"), name: "k", inclusive: true))
        #expect(named.end == named.start)
        let null = try QueryParams().equal(to: .empty)
        #expect(null.start == Bound(value: .empty))
        #expect(null.end == Bound(value: .empty))
    }

    @Test func boundsDropPriorities() throws {
        let params = try QueryParams().ordered(by: .value).starting(at: Node(.number(1), priority: .number(9)))
        #expect(params.start?.value == number(1))
    }

    @Test func errorsDescribeThemselves() {
        #expect(
            QueryError.orderByRequired.description == "orderBy must be defined when other query parameters are defined")
        #expect(
            QueryError.conflictingBounds("equalTo cannot be combined with startAt").description
                == "equalTo cannot be combined with startAt")
        #expect(QueryError.invalidLimit(0).description == "limit must be a positive integer, got 0")
        let bound = QueryError.invalidBound(
            index: .key, value: 3, reason: "when ordering by key, a bound must be a string key")
        #expect(
            bound.description
                == "3 cannot bound a query ordered by key: when ordering by key, a bound must be a string key")
    }
}
