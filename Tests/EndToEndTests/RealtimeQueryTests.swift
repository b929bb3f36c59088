import CanopyTesting
import Query
import Testing
import Transport
import Tree

/// Filtered queries over the realtime protocol: tagged listens and server-side one-shot reads.
struct RealtimeQueryTests {
    static let scores: JSONValue = ["a": ["s": 1], "b": ["s": 2], "c": ["s": 3], "d": ["s": 4]]
    /// `orderByChild("s").limitToLast(2)` as the official clients send it.
    static let lastTwo: JSONValue = ["i": "s", "l": 2, "vf": "r"]

    @Test func queryListenAnswersItsWindowTaggedBeforeOK() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("scores", Self.scores)
            let number = try await client.send(.listen(path: "scores", query: Self.lastTwo, tag: 7, hash: ""))
            #expect(
                try await client.nextMessage()
                    == .overwrite(path: "scores", data: ["c": ["s": 3], "d": ["s": 4]], tag: 7))
            let answer = try await client.nextMessage()
            #expect(answer.responseNumber == number)
            if case .response(_, let status, _) = answer { #expect(status == .ok) }
        }
    }

    @Test func onlyChangesTouchingTheWindowAreSent() async throws {
        try await withClients(2) { _, clients in
            let (writer, listener) = (clients[0], clients[1])
            try await writer.put("scores", Self.scores)
            try await listener.listen("scores", query: Self.lastTwo, tag: 7)

            // Outside the window: nothing. The next push must be for the change after it.
            try await writer.put("scores/a/s", 0)
            try await writer.put("scores/b/s", 10)
            let entered = try await listener.nextPush()
            #expect(entered == .merge(path: "scores", data: ["b": ["s": 10], "c": nil], tag: 7))

            // Inside the window: the changed child.
            try await writer.put("scores/d/s", 5)
            #expect(try await listener.nextPush() == .merge(path: "scores", data: ["d": ["s": 5]], tag: 7))

            // A new child below the window: nothing; one above it: enters, pushing one out.
            try await writer.put("scores/e", ["s": -1])
            try await writer.put("scores/f", ["s": 100])
            #expect(try await listener.nextPush() == .merge(path: "scores", data: ["f": ["s": 100], "d": nil], tag: 7))
            #expect(listener.pendingMessages.isEmpty, "\(listener.pendingMessages)")
        }
    }

    @Test func twoQueriesOnOneLocationKeepTheirTags() async throws {
        try await withClients(2) { _, clients in
            let (writer, listener) = (clients[0], clients[1])
            try await writer.put("scores", Self.scores)
            let firstTwo: JSONValue = ["i": "s", "l": 2, "vf": "l"]
            let last = try await listener.listen("scores", query: Self.lastTwo, tag: 1)
            let first = try await listener.listen("scores", query: firstTwo, tag: 2)
            #expect(last.overwrite?.tag == 1 && last.overwrite?.data == ["c": ["s": 3], "d": ["s": 4]])
            #expect(first.overwrite?.tag == 2 && first.overwrite?.data == ["a": ["s": 1], "b": ["s": 2]])

            try await writer.put("scores/a/s", 50)
            var pushes: [ServerMessage] = []
            pushes.append(try await listener.nextPush())
            pushes.append(try await listener.nextPush())
            #expect(pushes.contains(.merge(path: "scores", data: ["a": ["s": 50], "c": nil], tag: 1)), "\(pushes)")
            #expect(pushes.contains(.merge(path: "scores", data: ["a": nil, "c": ["s": 3]], tag: 2)), "\(pushes)")

            try await listener.requestOK(.unlisten(path: "scores", query: Self.lastTwo, tag: 1))
            try await writer.put("scores/b/s", 60)
            let after = try await listener.nextPush()
            #expect(after.merge?.tag == 2, "\(after)")
        }
    }

    @Test func getAppliesTheQueryOnTheServer() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("scores", Self.scores)
            #expect(try await client.get("scores", query: Self.lastTwo) == ["c": ["s": 3], "d": ["s": 4]])
            #expect(
                try await client.get("scores", query: ["i": "s", "l": 1, "vf": "l"]) == ["a": ["s": 1]])
            #expect(
                try await client.get("scores", query: ["i": ".key", "sp": "b", "sin": true, "ep": "c", "ein": true])
                    == ["b": ["s": 2], "c": ["s": 3]])
            #expect(
                try await client.get("scores", query: ["i": "s", "sp": 3, "sin": true, "ep": 3, "ein": true])
                    == ["c": ["s": 3]])
            // startAfter(2) on the child index, as the clients send it.
            #expect(
                try await client.get(
                    "scores", query: ["i": "s", "sp": 2, "sn": "[MAX_NAME]", "sin": false, "l": 1, "vf": "l"])
                    == ["c": ["s": 3]])
            #expect(try await client.get("scores", query: nil) == Self.scores)
        }
    }

    @Test func getHonoursTheSentinelsAndNullBoundsTheClientsSend() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("mixed", ["a": ["s": 1], "b": ["t": 1], "c": ["s": nil, "t": 2], "d": ["s": 2]])
            // equalTo(null) on a child index: children without the child.
            let withoutS = try await client.get(
                "mixed", query: ["i": "s", "sp": nil, "sin": true, "ep": nil, "ein": true])
            #expect(withoutS == ["b": ["t": 1], "c": ["t": 2]])
            // startAfter("b") on the key index: the key itself with sin false.
            let afterB = try await client.get("mixed", query: ["i": ".key", "sp": "b", "sin": false])
            #expect(afterB == ["c": ["t": 2], "d": ["s": 2]])
            // endBefore(2) on a child index: the MIN_NAME sentinel with ein false.
            let belowTwo = try await client.get(
                "mixed", query: ["i": "s", "ep": 2, "en": "[MIN_NAME]", "ein": false, "l": 5, "vf": "r"])
            #expect(belowTwo == ["a": ["s": 1], "b": ["t": 1], "c": ["t": 2]])
        }
    }

    @Test func getWithTheBuildersQueryObjectMatchesTheHandWrittenOne() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            try await client.put("scores", Self.scores)
            let params = try QueryParams().ordered(by: .child("s")).ending(at: Node(json: 2)).limited(toLast: 1)
            #expect(try await client.get("scores", query: params.wireObject) == ["b": ["s": 2]])
        }
    }

    @Test func invalidQueryObjectIsRefused() async throws {
        try await withClients(1) { _, clients in
            let answer = try await clients[0].request(
                .listen(path: "scores", query: ["l": "many", "vf": "l"], tag: 3, hash: ""))
            #expect(answer.status != .ok)
            let get = try await clients[0].request(.get(path: "scores", query: ["vf": "x", "l": 1]))
            #expect(get.status != .ok)
        }
    }
}
