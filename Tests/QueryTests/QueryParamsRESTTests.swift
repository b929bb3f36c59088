import Query
import Testing
import Tree

struct QueryParamsRESTTests: QueryParamsFixtures {
    typealias Bound = QueryParams.Bound

    @Test func readsTheDocumentedParameters() throws {
        let rest = ["orderBy": #""height""#, "startAt": "3", "limitToLast": "2", "print": "pretty", "ns": "demo"]
        let params = try QueryParams(restParameters: rest)
        #expect(params == (try QueryParams().ordered(by: .child("height")).starting(at: number(3)).limited(toLast: 2)))
        #expect(params.restParameters == ["orderBy": #""height""#, "startAt": "3", "limitToLast": "2"])
    }

    @Test func readsEveryParameter() throws {
        #expect(
            try QueryParams(restParameters: ["orderBy": #""$key""#, "startAfter": #""b""#, "endBefore": #""m""#])
                == (try QueryParams().ordered(by: .key).starting(after: string("b")).ending(before: string("m"))))
        #expect(
            try QueryParams(restParameters: ["orderBy": #""$value""#, "endAt": "true", "limitToFirst": "1"])
                == (try QueryParams().ordered(by: .value).ending(at: boolean(true)).limited(toFirst: 1)))
        #expect(
            try QueryParams(restParameters: ["orderBy": #""$priority""#, "equalTo": "null"])
                == (try QueryParams().equal(to: .empty)))
        #expect(
            try QueryParams(restParameters: ["orderBy": #""a/b""#, "startAfter": "5", "endBefore": "9"])
                == (try QueryParams().ordered(by: .child("a/b")).starting(after: number(5)).ending(before: number(9))))
    }

    @Test func readsKeyNamesAsTheJavaScriptSDKSendsThem() throws {
        #expect(
            try QueryParams(restParameters: ["orderBy": #""h""#, "startAfter": #"5,"[MAX_NAME]""#])
                == (try QueryParams().ordered(by: .child("h")).starting(after: number(5))))
        #expect(
            try QueryParams(restParameters: ["orderBy": #""h""#, "startAt": #"5,"k""#])
                == (try QueryParams().ordered(by: .child("h")).starting(at: number(5), key: "k")))
        #expect(
            try QueryParams(restParameters: ["orderBy": #""$priority""#, "equalTo": #""p","k""#])
                == (try QueryParams().equal(to: string("p"), key: "k")))
        #expect(
            try QueryParams().ordered(by: .value).ending(before: number(1), key: "k").restParameters
                == ["orderBy": #""$value""#, "endBefore": #"1,"k""#])
    }

    @Test func ignoresOtherParameters() throws {
        let rest = ["print": "silent", "shallow": "true", "format": "export", "auth": "x", "ns": "n"]
        #expect(try QueryParams(restParameters: rest) == .default)
        #expect(QueryParams.default.restParameters == [:])
        #expect(try QueryParams(restParameters: ["orderBy": #""$priority""#]) == .default)
    }

    @Test(arguments: ["startAt", "startAfter", "endAt", "endBefore", "equalTo", "limitToFirst", "limitToLast"])
    func rangeAndLimitNeedOrderBy(parameter: String) {
        #expect(throws: QueryError.orderByRequired) { try QueryParams(restParameters: [parameter: "1"]) }
        let error = queryError { try QueryParams(restParameters: [parameter: "1"]) }
        #expect(error?.description == "orderBy must be defined when other query parameters are defined")
    }

    @Test func rejectsValuesThatAreNotJSON() {
        #expect(throws: QueryError.invalidParameter(name: "startAt", value: "abc", reason: "must be a JSON value")) {
            try QueryParams(restParameters: ["orderBy": #""$key""#, "startAt": "abc"])
        }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": "$key"]) }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": "3"]) }
        #expect(throws: QueryError.self) {
            try QueryParams(restParameters: ["orderBy": #""h""#, "endAt": "{\"a\":1}"])
        }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": #""h""#, "endAt": "[1]"]) }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": #""h""#, "endAt": "1,2"]) }
        #expect(throws: QueryError.self) {
            try QueryParams(restParameters: ["orderBy": #""h""#, "endAt": #"1,"a","b""#])
        }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": #""h""#, "endAt": ""]) }
        #expect(throws: QueryError.self) { try QueryParams(restParameters: ["orderBy": #""""#]) }
    }

    @Test(arguments: ["0", "-1", "2.5", #""2""#, "x", "", "1e300"])
    func rejectsBadLimits(text: String) {
        #expect(
            throws: QueryError.invalidParameter(name: "limitToFirst", value: text, reason: "must be a positive integer")
        ) {
            try QueryParams(restParameters: ["orderBy": #""$key""#, "limitToFirst": text])
        }
    }

    @Test func rejectsImpossibleCombinations() {
        #expect(throws: QueryError.limitAlreadySet) {
            try QueryParams(restParameters: ["orderBy": #""$key""#, "limitToFirst": "1", "limitToLast": "1"])
        }
        #expect(throws: QueryError.conflictingBounds("equalTo cannot be combined with startAt")) {
            try QueryParams(restParameters: ["orderBy": #""h""#, "equalTo": "1", "startAt": "1"])
        }
        #expect(throws: QueryError.self) {
            try QueryParams(restParameters: ["orderBy": #""h""#, "startAfter": "1", "startAt": "1"])
        }
        #expect(rejectsBound { try QueryParams(restParameters: ["orderBy": #""$key""#, "startAt": "3"]) })
        #expect(rejectsBound { try QueryParams(restParameters: ["orderBy": #""$priority""#, "startAt": "true"]) })
    }
}
