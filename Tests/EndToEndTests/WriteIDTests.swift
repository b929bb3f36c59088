import CanopyTesting
import Foundation
import Testing
import Transport
import Tree

/// Canopy's write ids: a write resent under the id it was first sent with (after its answer was
/// lost with a connection) is answered as it was the first time and never applied twice.
struct WriteIDTests {
    static let increment: JSONValue = [".sv": ["increment": 1]]

    @Test func theHelloOffersWriteIDs() async throws {
        try await withClients(1) { _, clients in
            #expect(clients[0].hello.extensions == [RealtimeHello.writeIDsExtension])
        }
    }

    @Test func aResentIncrementOrMergeIsAnsweredOKWithoutBeingAppliedAgain() async throws {
        try await withClients(2) { server, clients in
            let (first, second) = (clients[0], clients[1])
            let put = ClientAction.put(path: "counter", data: Self.increment, hash: nil)
            let merge = ClientAction.merge(path: "", data: ["counter": Self.increment, "log/a": true])
            #expect(try await first.request(put, writeID: WriteID(client: "device", sequence: 1)).isOK)
            #expect(try await first.request(merge, writeID: WriteID(client: "device", sequence: 2)).isOK)
            #expect(try await first.get("counter") == 2)
            // The same writes again, on another connection, as after a reconnect.
            #expect(try await second.request(put, writeID: WriteID(client: "device", sequence: 1)).isOK)
            #expect(try await second.request(merge, writeID: WriteID(client: "device", sequence: 2)).isOK)
            #expect(try await second.get("counter") == 2)
            // Later writes, and another client's with the same numbers, are applied.
            #expect(try await second.request(put, writeID: WriteID(client: "device", sequence: 3)).isOK)
            #expect(try await second.request(put, writeID: WriteID(client: "other", sequence: 1)).isOK)
            #expect(try await second.get("counter") == 4)
            // Without an id a write is applied each time, as in Firebase.
            #expect(try await second.request(put).isOK)
            #expect(try await second.request(put).isOK)
            #expect(try await second.get("counter") == 6)
            let metrics = try await server.http(.GET, "/metrics").body
            #expect(metrics.contains("canopy_resent_writes_total 2"), "\(metrics)")
        }
    }

    @Test func aResendIsAnsweredAsTheFirstRunWasRefusedOrStale() async throws {
        try await withClients(1) { _, clients in
            let client = clients[0]
            let refused = ClientAction.put(path: "a", data: [".sv": "no such value"], hash: nil)
            let first = try await client.request(refused, writeID: WriteID(client: "c", sequence: 1))
            #expect(first.status == .invalidData)
            let stale = ClientAction.put(path: "a", data: 5, hash: "not the hash")
            #expect(try await client.request(stale, writeID: WriteID(client: "c", sequence: 2)).status == .dataStale)
            #expect(
                try await client.request(
                    .put(path: "b", data: 1, hash: nil), writeID: WriteID(client: "c", sequence: 3)
                ).isOK)
            // Resent after a later write was applied: still the first answers, and nothing applied.
            let again = try await client.request(refused, writeID: WriteID(client: "c", sequence: 1))
            #expect(again.status == .invalidData && again.data == first.data)
            #expect(try await client.request(stale, writeID: WriteID(client: "c", sequence: 2)).status == .dataStale)
            #expect(try await client.get("a") == .null)
        }
    }

    /// The case write ids exist for: a client sends writes without waiting, loses the connection
    /// before reading a single answer, and sends them all again on a new one while the server may
    /// still be running the first copies.
    @Test func writesResentWhileTheirFirstCopiesMayStillBeRunningApplyOnce() async throws {
        try await withClients(1) { server, clients in
            let reader = clients[0]
            for round in 0..<5 {
                let lost = try await RealtimeTestClient.connect(to: server)
                let writes = (0..<40).map { index in
                    (
                        ClientAction.put(path: "counter", data: Self.increment, hash: nil),
                        WriteID(client: "round-\(round)", sequence: index)
                    )
                }
                for (action, id) in writes { try await lost.send(action, writeID: id) }
                try await lost.vanish()
                let resender = try await RealtimeTestClient.connect(to: server)
                var numbers: [Int] = []
                for (action, id) in writes { numbers.append(try await resender.send(action, writeID: id)) }
                for number in numbers { #expect(try await resender.response(to: number).isOK) }
                await resender.close()
                await lost.close()
                #expect(try await reader.get("counter") == .number(Double(40 * (round + 1))))
            }
        }
    }

    /// What the server remembers of named writes is stored with them and read back when the
    /// namespace opens again: after a restart a resend is answered as before, not applied again
    /// (an applied increment, a refusal and a stale compare-and-set, below a later applied write).
    @Test func aResendAfterARestartIsAnsweredFromTheStoreNotAppliedAgain() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let increment = ClientAction.put(path: "counter", data: Self.increment, hash: nil)
        let refused = ClientAction.put(path: "a", data: [".sv": "no such value"], hash: nil)
        let stale = ClientAction.put(path: "a", data: 5, hash: "not the hash")
        let merge = ClientAction.merge(path: "", data: ["counter": Self.increment, "log/m": true])
        let refusal = try await withTestServer(dataDirectory: folder) { server in
            let client = try await RealtimeTestClient.connect(to: server)
            #expect(try await client.request(increment, writeID: WriteID(client: "device", sequence: 1)).isOK)
            let refusal = try await client.request(refused, writeID: WriteID(client: "device", sequence: 2))
            #expect(
                try await client.request(stale, writeID: WriteID(client: "device", sequence: 3)).status == .dataStale)
            #expect(try await client.request(merge, writeID: WriteID(client: "device", sequence: 4)).isOK)
            #expect(try await client.request(increment, writeID: WriteID(client: "other", sequence: 1)).isOK)
            #expect(try await client.get("counter") == 3)
            await client.close()
            return refusal
        }
        #expect(refusal.status == .invalidData)
        try await withTestServer(dataDirectory: folder) { server in
            let client = try await RealtimeTestClient.connect(to: server)
            #expect(try await client.request(increment, writeID: WriteID(client: "device", sequence: 1)).isOK)
            let again = try await client.request(refused, writeID: WriteID(client: "device", sequence: 2))
            #expect(again.status == refusal.status && again.data == refusal.data, "\(again)")
            #expect(
                try await client.request(stale, writeID: WriteID(client: "device", sequence: 3)).status == .dataStale)
            #expect(try await client.request(merge, writeID: WriteID(client: "device", sequence: 4)).isOK)
            #expect(try await client.request(increment, writeID: WriteID(client: "other", sequence: 1)).isOK)
            #expect(try await client.get("counter") == 3, "nothing applied again")
            #expect(try await client.get("a") == .null)
            // The next writes run.
            #expect(try await client.request(increment, writeID: WriteID(client: "device", sequence: 5)).isOK)
            #expect(try await client.get("counter") == 4)
            let metrics = try await server.http(.GET, "/metrics").body
            #expect(metrics.contains("canopy_resent_writes_total 5"), "\(metrics)")
            await client.close()
        }
    }
}
