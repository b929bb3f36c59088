import AsyncHTTPClient
import CanopyServer
import CanopyTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import RealtimeClientSocket
import Testing
import Transport
import Tree

/// A server given a certificate and key serves HTTPS and `wss://` on its port, as a client that
/// trusts the certificate's CA meets it; and nothing in clear.
@Suite(.timeLimit(.minutes(3)))
struct TLSServingTests {
    @Test func restOverHTTPS() async throws {
        try await Self.withTLSServer { server, authority, _ in
            let client = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(tlsConfiguration: try authority.clientConfiguration()))
            defer { _ = client.shutdown() }
            let base = "https://localhost:\(server.port)"
            var put = HTTPClientRequest(url: base + "/rooms/a.json")
            put.method = .PUT
            put.body = .bytes(ByteBuffer(string: #"{"name": "lobby", "size": 3}"#))
            #expect(try await Self.send(put, with: client).status == 200)
            var second = HTTPClientRequest(url: base + "/rooms/b.json")
            second.method = .PUT
            second.body = .bytes(ByteBuffer(string: #"{"name": "hall", "size": 9}"#))
            #expect(try await Self.send(second, with: client).status == 200)

            let read = try await Self.send(HTTPClientRequest(url: base + "/rooms/a/name.json"), with: client)
            #expect(read.status == 200 && read.body == #""lobby""#)
            let query = try await Self.send(
                HTTPClientRequest(url: base + #"/rooms.json?orderBy=%22size%22&limitToLast=1"#), with: client)
            #expect(try JSONValue(parsing: query.body) == JSONValue(parsing: #"{"b": {"name": "hall", "size": 9}}"#))
            let health = try await Self.send(HTTPClientRequest(url: base + "/health"), with: client)
            #expect(health.status == 200)
            let metrics = try await Self.send(HTTPClientRequest(url: base + "/metrics"), with: client)
            #expect(metrics.status == 200 && metrics.body.contains("canopy_"))

            var stream = HTTPClientRequest(url: base + "/rooms/a.json")
            stream.headers.add(name: "Accept", value: "text/event-stream")
            let events = try await client.execute(stream, timeout: .seconds(30))
            #expect(events.status == .ok)
            var first = ""
            for try await chunk in events.body {
                first += String(buffer: chunk)
                if first.contains("\n\n") { break }
            }
            #expect(first.hasPrefix("event: put\ndata: "), "\(first)")
            #expect(first.contains(#""name":"lobby""#), "\(first)")
        }
    }

    @Test func realtimeOverWSS() async throws {
        try await Self.withTLSServer { server, authority, _ in
            let endpoint = RealtimeEndpoint(host: "localhost", port: server.port, secure: true, namespace: "test")
            let tls = try authority.clientConfiguration()
            let logger = TestServer.makeLogger()
            let writer = try await RealtimeClient.connect(to: endpoint, tlsConfiguration: tls, logger: logger)
            let reader = try await RealtimeClient.connect(to: endpoint, tlsConfiguration: tls, logger: logger)
            #expect(writer.hello.host == "localhost:\(server.port)")
            var writes = writer.messages.makeAsyncIterator()
            var reads = reader.messages.makeAsyncIterator()

            _ = reader.send(
                .request(ClientRequest(number: 1, action: .listen(path: "/scores", query: nil, tag: nil, hash: nil))))
            let listened = await reads.messages(throughAnswerTo: 1)
            #expect(listened.status(of: 1) == .ok)

            _ = writer.send(
                .request(ClientRequest(number: 1, action: .put(path: "/scores/ann", data: .number(3), hash: nil))))
            #expect(await writes.messages(throughAnswerTo: 1).status(of: 1) == .ok)
            _ = writer.send(
                .request(ClientRequest(number: 2, action: .put(path: "/scores/bob", data: .number(7), hash: nil))))
            #expect(await writes.messages(throughAnswerTo: 2).status(of: 2) == .ok)
            var pushed: [JSONValue] = []
            while pushed.count < 2, let message = await reads.next() {
                if case .overwrite(_, let data, _) = message { pushed.append(data) }
            }
            #expect(pushed == [.number(3), .number(7)])

            let top = try JSONValue(parsing: #"{"i": ".value", "l": 1, "vf": "r"}"#)
            _ = reader.send(.request(ClientRequest(number: 2, action: .get(path: "/scores", query: top))))
            #expect(await reads.messages(throughAnswerTo: 2).data(of: 2) == (try JSONValue(parsing: #"{"bob": 7}"#)))

            _ = writer.send(
                .request(
                    ClientRequest(number: 3, action: .onDisconnectPut(path: "/presence/writer", data: .string("gone"))))
            )
            #expect(await writes.messages(throughAnswerTo: 3).status(of: 3) == .ok)
            _ = reader.send(
                .request(
                    ClientRequest(number: 3, action: .listen(path: "/presence/writer", query: nil, tag: nil, hash: nil))
                ))
            _ = await reads.messages(throughAnswerTo: 3)
            writer.close()
            var gone = false
            while !gone, let message = await reads.next() {
                if case .overwrite("presence/writer", .string("gone"), _) = message { gone = true }
            }
            #expect(gone)
            reader.close()
        }
    }

    /// TLS 1.0 and 1.1 are refused; 1.2 and 1.3 are served, agreeing on `http/1.1`.
    @Test func onlyTLS12AndLaterWithALPNHTTP11() async throws {
        try await Self.withTLSServer { server, authority, identity in
            var old = try authority.clientConfiguration()
            old.minimumTLSVersion = .tlsv1
            old.maximumTLSVersion = .tlsv11
            await #expect(throws: (any Error).self) {
                try await TLSProbe.handshake(port: server.port, configuration: old)
            }
            for version in [TLSVersion.tlsv12, .tlsv13] {
                var modern = try authority.clientConfiguration()
                modern.minimumTLSVersion = version
                modern.maximumTLSVersion = version
                let handshake = try await TLSProbe.handshake(port: server.port, configuration: modern)
                #expect(handshake.fingerprint == identity.fingerprint)
                #expect(handshake.negotiatedProtocol == "http/1.1")
            }
        }
    }

    /// Plain HTTP to the TLS port gets a 400 saying to use https, and the connection is closed.
    @Test func plainHTTPIsAnsweredWithTheScheme() async throws {
        try await Self.withTLSServer { server, _, _ in
            let exchange = try await server.exchangeRaw("GET /a.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(exchange.closedByServer)
            #expect(exchange.status == 400, "\(exchange.text)")
            #expect(exchange.json?["error"]?.stringValue?.contains("use https://") == true, "\(exchange.text)")
            let upgrade = try await server.exchangeRaw(
                "GET /.ws?v=5&ns=test HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(upgrade.status == 400 && upgrade.body.contains("wss://"), "\(upgrade.text)")
        }
    }

    /// A renewed pair written over the files is served to new connections once the periodic check
    /// reads it; a connection opened before keeps working.
    @Test func aRenewedPairOnDiskReachesNewConnections() async throws {
        try await Self.withTLSServer(checkInterval: .milliseconds(100)) { server, authority, first in
            let endpoint = RealtimeEndpoint(host: "localhost", port: server.port, secure: true, namespace: "test")
            let tls = try authority.clientConfiguration()
            let old = try await RealtimeClient.connect(
                to: endpoint, tlsConfiguration: tls, logger: TestServer.makeLogger())
            var messages = old.messages.makeAsyncIterator()
            let renewed = try authority.issue()
            try renewed.write(to: server.tlsFolder)
            #expect(
                await eventually {
                    try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint
                        == renewed.fingerprint
                })
            #expect(renewed.fingerprint != first.fingerprint)
            _ = old.send(.request(ClientRequest(number: 1, action: .put(path: "/after", data: .bool(true), hash: nil))))
            #expect(await messages.messages(throughAnswerTo: 1).status(of: 1) == .ok)
            old.close()
        }
    }

    /// A new pair that cannot be served (a key that is not the certificate's) is not: the current
    /// certificate stays, and ``CanopyServer/reloadTLS()`` says so.
    @Test func aMismatchedPairOnDiskIsNotServed() async throws {
        try await Self.withTLSServer(checkInterval: .seconds(3600)) { server, authority, first in
            try authority.issue().withKey(of: try authority.issue()).write(to: server.tlsFolder)
            #expect(server.server.reloadTLS() == false)
            let tls = try authority.clientConfiguration()
            #expect(
                try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint == first.fingerprint)
            let next = try authority.issue()
            try next.write(to: server.tlsFolder)
            #expect(server.server.reloadTLS())
            #expect(try await TLSProbe.handshake(port: server.port, configuration: tls).fingerprint == next.fingerprint)
        }
    }

    // MARK: Support

    static func withTLSServer(
        checkInterval: Duration = .seconds(30),
        _ body: (TestServer, TestCertificateAuthority, TestIdentity) async throws -> Void
    ) async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try TestCertificateAuthority()
        let identity = try authority.issue()
        let files = try identity.write(to: folder)
        try await withTestServer(configure: {
            $0.tls = TLSFiles(certificate: files.certificate, key: files.key)
            $0.tlsCheckInterval = checkInterval
        }) { server in
            try await body(server, authority, identity)
        }
    }

    static func send(_ request: HTTPClientRequest, with client: HTTPClient) async throws -> (status: Int, body: String)
    {
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }
}

extension TestServer {
    /// The folder ``TLSServingTests/withTLSServer(checkInterval:_:)`` wrote the pair to.
    var tlsFolder: String {
        URL(fileURLWithPath: configuration.tls?.certificate ?? "/").deletingLastPathComponent().path
    }
}

extension AsyncStream<ServerMessage>.Iterator {
    /// Reads messages up to and including the answer to request `number`.
    mutating func messages(throughAnswerTo number: Int) async -> [ServerMessage] {
        var taken: [ServerMessage] = []
        while let message = await next() {
            taken.append(message)
            if case .response(number, _, _) = message { break }
        }
        return taken
    }
}
