import CanopyTesting
import Testing
import Tree

/// HEAD, 405 with `Allow`, and CORS for pages in a browser.
struct HTTPMethodTests {
    @Test func headAnswersLikeGetWithoutABody() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/h.json", body: #"{"a": [1, 2, 3]}"#)
            let get = try await server.exchangeRaw("GET /h.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let head = try await server.exchangeRaw("HEAD /h.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(get.status == 200)
            #expect(head.status == 200, "answer: \(head.text)")
            #expect(head.header("Content-Length") == get.header("Content-Length"))
            #expect(head.header("Content-Type") == get.header("Content-Type"))
            #expect(!get.body.isEmpty)
            // The server closed the connection after the head: no body bytes came before that.
            #expect(head.closedByServer)
            #expect(head.body.isEmpty, "HEAD answered with a body: \(head.body)")

            let health = try await server.exchangeRaw("HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(health.status == 200)
            #expect(health.body.isEmpty)
        }
    }

    @Test func methodNotAllowedNamesTheAllowedMethods() async throws {
        try await withTestServer { server in
            let data = try await server.http(.TRACE, "/x.json")
            #expect(data.status == 405)
            #expect(data.header("Allow") == "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS")
            let message = try #require(data.json?["error"]?.stringValue)
            #expect(message.contains("TRACE") && message.contains("GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"))

            let health = try await server.http(.DELETE, "/health")
            #expect(health.status == 405)
            #expect(health.header("Allow") == "GET, HEAD, OPTIONS")
            #expect(health.json?["error"]?.stringValue?.contains("GET, HEAD, OPTIONS") == true)

            let rules = try await server.http(.POST, "/.settings/rules.json", body: "{}")
            #expect(rules.status == 405)
            #expect(rules.header("Allow") == "GET, HEAD, PUT, OPTIONS")

            let connect = try await server.exchangeRaw("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
            #expect(connect.status == 405, "answer: \(connect.text)")
            #expect(connect.header("Allow") == "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS")
            #expect(connect.header("Content-Type") == "application/json; charset=utf-8")
            #expect(connect.header("Content-Length") == String(connect.body.utf8.count))
            #expect(connect.json?["error"]?.stringValue?.contains("CONNECT") == true, "body: \(connect.body)")
            #expect(connect.closedByServer)
        }
    }

    @Test func preflightAllowsEveryOriginTheRESTMethodsAndTheRequestedHeaders() async throws {
        try await withTestServer { server in
            let preflight = try await server.http(
                .OPTIONS, "/users/ada.json",
                headers: [
                    ("Origin", "https://app.example"), ("Access-Control-Request-Method", "PUT"),
                    ("Access-Control-Request-Headers", "content-type,x-firebase-etag,if-match"),
                ])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "*")
            #expect(preflight.header("Access-Control-Allow-Methods") == "GET, PUT, POST, PATCH, DELETE, OPTIONS")
            #expect(preflight.header("Access-Control-Allow-Headers") == "content-type,x-firebase-etag,if-match")
            #expect(preflight.header("Access-Control-Max-Age").flatMap { Int($0) } ?? 0 > 0)

            let plain = try await server.http(
                .OPTIONS, "/users.json",
                headers: [("Origin", "https://app.example"), ("Access-Control-Request-Method", "GET")])
            #expect(plain.status == 204)
            let allowed = try #require(plain.header("Access-Control-Allow-Headers"))
            for name in ["Authorization", "Content-Type", "X-Firebase-ETag", "If-Match", "If-None-Match"] {
                #expect(allowed.contains(name), "\(name) missing from \(allowed)")
            }
        }
    }

    @Test func everyRESTAnswerAllowsEveryOrigin() async throws {
        try await withTestServer { server in
            let origin = [("Origin", "https://app.example")]
            let write = try await server.http(.PUT, "/c.json", headers: origin, body: "1")
            let read = try await server.http(.GET, "/c.json", headers: origin + [("X-Firebase-ETag", "true")])
            let invalid = try await server.http(.PUT, "/c.json", headers: origin, body: "{nope")
            let notFound = try await server.http(.GET, "/c", headers: origin)
            let notAllowed = try await server.http(.TRACE, "/c.json", headers: origin)
            let notModified = try await server.http(
                .GET, "/c.json", headers: origin + [("If-None-Match", read.header("ETag") ?? "x")])
            let silent = try await server.http(.PUT, "/c.json?print=silent", headers: origin, body: "2")
            for (name, answer) in [
                ("write", write), ("read", read), ("invalid", invalid), ("not found", notFound),
                ("not allowed", notAllowed), ("silent", silent), ("not modified", notModified),
            ] {
                #expect(answer.header("Access-Control-Allow-Origin") == "*", "\(name): \(answer.status)")
            }
            #expect(notModified.status == 304)
            #expect(read.header("Access-Control-Expose-Headers")?.contains("ETag") == true)

            let stream = try await server.eventStream("/c.json", headers: origin)
            #expect(stream.status == 200)
            #expect(stream.header("Access-Control-Allow-Origin") == "*")
            await stream.close()
        }
    }
}
