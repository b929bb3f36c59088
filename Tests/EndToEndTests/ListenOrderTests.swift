import CanopyTesting
import Testing
import Transport
import Tree

/// A new listen's first data is sent in the same step that registers it, so no later update can
/// overtake it: a client never sees data go back in time.
struct ListenOrderTests {
    @Test func aListensSnapshotIsNeverOvertakenByANewerUpdate() async throws {
        try await withClients(2) { _, clients in
            let (writer, listener) = (clients[0], clients[1])
            try await writer.put("counter", 0)
            // The writer keeps counting until the listener has listened and stopped 100 times.
            let writing = Task {
                var value = 0
                while !Task.isCancelled {
                    value += 1
                    let number = try await writer.send(.put(path: "counter", data: .number(Double(value)), hash: nil))
                    // At most 16 writes in flight, so the server keeps up and listens are not starved.
                    if value % 16 == 0 { _ = try await writer.response(to: number) }
                }
            }
            var seen: [Double] = []
            for _ in 0..<100 {
                let listen = try await listener.send(.listen(path: "counter", query: nil, tag: nil, hash: nil))
                try await Self.collect(until: listen, from: listener, into: &seen)
                let unlisten = try await listener.send(.unlisten(path: "counter", query: nil, tag: nil))
                try await Self.collect(until: unlisten, from: listener, into: &seen)
            }
            writing.cancel()
            _ = await writing.result
            #expect(Set(seen).count > 10, "the writer did not write while the listener listened: \(seen.prefix(20))")
            let wentBack = zip(seen, seen.dropFirst()).first { $0.1 < $0.0 }
            #expect(wentBack == nil, "the listener saw \(wentBack.map { "\($0.0) then \($0.1)" } ?? "")")
        }
    }

    /// Takes messages up to the answer to request `number`, recording every value pushed.
    static func collect(until number: Int, from client: RealtimeTestClient, into seen: inout [Double]) async throws {
        while true {
            let message = try await client.nextMessage()
            if case .overwrite(_, let data, _) = message, case .number(let value) = data { seen.append(value) }
            if case .response(number, let status, _) = message {
                #expect(status == .ok)
                return
            }
        }
    }
}
