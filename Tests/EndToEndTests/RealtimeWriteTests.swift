import CanopyTesting
import Testing
import Transport
import Tree

/// Writes over the realtime protocol: put, merge, compare-and-set, server values, priorities.
struct RealtimeWriteTests {
    @Test func putMergeAndGetRoundTrip() async throws {
        try await withClients(2) { _, clients in
            let (writer, reader) = (clients[0], clients[1])
            try await writer.put("users/ada", ["name": "Ada", "age": 36, "langs": ["x", "y"]])
            // Arrays are children "0", "1": on the wire they may come as an array or an object.
            let ada = try await reader.get("users/ada")
            #expect(try Node(json: ada) == Node(json: ["name": "Ada", "age": 36, "langs": ["x", "y"]]))
            #expect(try await reader.get("users/ada/name") == "Ada")

            try await writer.requestOK(.merge(path: "users", data: ["ada/age": 37, "bob": ["name": "Bob"]]))
            let merged = try await reader.get("users")
            let expected: JSONValue = [
                "ada": ["name": "Ada", "age": 37, "langs": ["x", "y"]], "bob": ["name": "Bob"],
            ]
            #expect(try Node(json: merged) == Node(json: expected))

            try await writer.requestOK(.merge(path: "users", data: ["bob": nil, "ada/langs": nil]))
            #expect(try await reader.get("users") == ["ada": ["name": "Ada", "age": 37]])

            try await writer.put("users/ada", nil)
            #expect(try await reader.get("users") == .null)
            #expect(try await reader.get("never/written") == .null)
        }
    }

    @Test func emptyMergeIsAnsweredOKAndChangesNothing() async throws {
        try await withClients(1) { _, clients in
            try await clients[0].put("a", 1)
            try await clients[0].requestOK(.merge(path: "a", data: [:]))
            #expect(try await clients[0].get("a") == 1)
        }
    }

    @Test func compareAndSetAppliesOnlyWhenTheHashMatches() async throws {
        try await withClients(2) { _, clients in
            let (client, other) = (clients[0], clients[1])
            try await client.put("counter", ["n": 1, ".priority": 3])
            let current = try Node(json: ["n": 1, ".priority": 3])

            let matched = try await client.request(.put(path: "counter", data: ["n": 2], hash: current.hash))
            #expect(matched.status == .ok)
            #expect(try await client.get("counter") == ["n": 2])

            let stale = try await client.request(.put(path: "counter", data: ["n": 99], hash: current.hash))
            #expect(stale.status == .dataStale)
            #expect(try await client.get("counter") == ["n": 2])

            // Absent data hashes to "".
            #expect(try await client.request(.put(path: "fresh", data: 1, hash: "")).status == .ok)
            #expect(try await client.request(.put(path: "fresh", data: 2, hash: "")).status == .dataStale)
            #expect(try await other.get("fresh") == 1)
        }
    }

    /// Hashes as the official clients compute them (SHA-1 of the canonical string, base64),
    /// worked out independently of Canopy's own code.
    static let officialHashes: [(value: JSONValue, hash: String)] = [
        (1, "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ="),
        ("old", "cRZbGT1X5gYqX7tlaSU1Z2zW1nY="),
        (["n": 1, ".priority": 3], "HjwqAj33wRQ4fLgzsaX94gyEMUo="),
        (["a": true, "b": "x", "c": 2.5], "2retxb64uytRd/wG2/KiahMDcRA="),
        (["x": [".value": 1, ".priority": 2], "y": [".value": 2, ".priority": 1]], "Cill6vie+aQdsFpUZUQLmEyo2yI="),
    ]

    @Test func compareAndSetAcceptsTheHashTheOfficialClientsCompute() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            for (offset, vector) in Self.officialHashes.enumerated() {
                let path = "cas/\(offset)"
                try await client.put(path, vector.value)
                let answer = try await client.request(.put(path: path, data: "replaced", hash: vector.hash))
                #expect(answer.status == .ok, "hash of \(vector.value.serialized())")
                #expect(try await client.get(path) == "replaced")
            }
        }
    }

    @Test func listenDataArrivesBeforeADatastaleAnswer() async throws {
        try await withClients(2) { _, clients in
            let (client, other) = (clients[0], clients[1])
            try await client.put("x", "old")
            try await client.listen("x")
            try await other.put("x", "new")
            let number = try await client.send(.put(path: "x", data: "mine", hash: try Node(json: "old").hash))
            let first = try await client.nextMessage()
            #expect(first.overwrite?.path == "x" && first.overwrite?.data == "new", "got \(first)")
            let answer = try await client.response(to: number)
            #expect(answer.status == .dataStale)
        }
    }

    @Test func serverTimestampResolvesToServerTimeAndIsOneInstantPerWrite() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let before = nowMilliseconds()
            try await client.put(
                "stamps", ["a": [".sv": "timestamp"], "deep": ["b": [".sv": "timestamp"]], "plain": 1])
            let after = nowMilliseconds()
            let stamps = try await client.get("stamps")
            let a = try #require(stamps["a"]?.numberValue)
            #expect(a >= before - 1000 && a <= after + 1000)
            #expect(stamps["deep"]?["b"]?.numberValue == a)
            #expect(stamps["plain"] == 1)

            try await client.requestOK(.merge(path: "stamps", data: ["deep/c": [".sv": "timestamp"]]))
            let merged = try await client.get("stamps/deep/c")
            #expect((merged.numberValue ?? 0) >= a)
        }
    }

    @Test func everyTimestampInOneMergeIsTheSameInstant() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let stamp: JSONValue = [".sv": "timestamp"]
            try await client.requestOK(.merge(path: "m", data: ["a/t": stamp, "b": ["t": stamp], "c": stamp]))
            let value = try await client.get("m")
            let a = try #require(value["a"]?["t"]?.numberValue)
            #expect(value["b"]?["t"]?.numberValue == a && value["c"]?.numberValue == a, "\(value)")
        }
    }

    @Test func infoIsNotWritable() async throws {
        try await withClients(1) { server, clients in
            let answer = try await clients[0].request(.put(path: ".info/connected", data: false, hash: nil))
            #expect(answer.status != .ok)
            let merge = try await clients[0].request(.merge(path: "/", data: [".info/x": 1, "y": 2]))
            #expect(merge.status != .ok)
            let rest = try await server.http(.PUT, "/.info/x.json", body: "1")
            #expect(rest.status == 400)
            #expect(try await server.http(.GET, "/.json?ns=test").body == "null")
        }
    }

    @Test func incrementIsAtomicUnderConcurrentClients() async throws {
        let clientCount = 20
        let incrementsPerClient = 50
        try await withClients(clientCount) { _, clients in
            try await clients[0].put("likes", 5)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask {
                        var numbers: [Int] = []
                        for _ in 0..<incrementsPerClient {
                            numbers.append(
                                try await client.send(.put(path: "likes", data: [".sv": ["increment": 1]], hash: nil)))
                        }
                        for number in numbers {
                            let answer = try await client.response(to: number, timeout: .seconds(60))
                            #expect(answer.status == .ok)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await clients[1].get("likes") == .number(Double(5 + clientCount * incrementsPerClient)))
        }
    }

    @Test func incrementOfANonNumberStartsFromZero() async throws {
        try await withClients(1) { _, clients in
            try await clients[0].put("n", "text")
            try await clients[0].put("n", [".sv": ["increment": 2.5]])
            #expect(try await clients[0].get("n") == 2.5)
            try await clients[0].put("absent", [".sv": ["increment": -3]])
            #expect(try await clients[0].get("absent") == -3)
        }
    }

    @Test func prioritiesRoundTripAndCanBeSetAlone() async throws {
        try await withClients(2) { _, clients in
            let (client, listener) = (clients[0], clients[1])
            try await client.put("leaf", [".value": 5, ".priority": 2])
            #expect(try await client.get("leaf") == [".value": 5, ".priority": 2])
            try await client.put("object", ["a": 1, ".priority": "p", "nested": ["b": true, ".priority": 1.5]])
            #expect(
                try await client.get("object") == ["a": 1, ".priority": "p", "nested": ["b": true, ".priority": 1.5]])

            let initial = try await listener.listen("leaf")
            #expect(initial.overwrite?.data == [".value": 5, ".priority": 2])

            try await client.put("leaf/.priority", 9)
            #expect(try await client.get("leaf") == [".value": 5, ".priority": 9])
            let push = try await listener.nextPush()
            let update = try #require(push.overwrite)
            let asPriority = update.path == "leaf/.priority" && update.data == 9
            let asWhole = update.path == "leaf" && update.data == [".value": 5, ".priority": 9]
            #expect(asPriority || asWhole, "\(push)")

            try await client.put("object/.priority", nil)
            #expect(try await client.get("object") == ["a": 1, "nested": ["b": true, ".priority": 1.5]])
        }
    }
}
