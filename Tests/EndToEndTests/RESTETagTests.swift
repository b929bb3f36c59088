import CanopyTesting
import Testing
import Tree

/// Conditional REST requests: `X-Firebase-ETag`, `if-none-match` and `if-match`.
struct RESTETagTests {
    static func etag(_ server: TestServer, _ path: String) async throws -> String {
        let response = try await server.http(.GET, path, headers: [("X-Firebase-ETag", "true")])
        #expect(response.status == 200)
        return try #require(response.header("ETag"))
    }

    @Test func etagIsSentOnlyWhenAskedFor() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/doc.json", body: #"{"a":1}"#)
            let plain = try await server.http(.GET, "/doc.json")
            #expect(plain.header("ETag") == nil)
            let tagged = try await server.http(.GET, "/doc.json", headers: [("X-Firebase-ETag", "true")])
            #expect(tagged.json == ["a": 1])
            let etag = try #require(tagged.header("ETag"))
            #expect(!etag.isEmpty)
            #expect(try await Self.etag(server, "/doc.json") == etag, "an ETag must be stable for equal data")
            _ = try await server.http(.PUT, "/doc/a.json", body: "2")
            #expect(try await Self.etag(server, "/doc.json") != etag)
            #expect(try await Self.etag(server, "/absent.json") == "null_etag")
        }
    }

    @Test func ifNoneMatchAnswers304WhenUnchangedElse200WithETag() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/doc.json", body: #"{"a":1}"#)
            let etag = try await Self.etag(server, "/doc.json")

            let unchanged = try await server.http(.GET, "/doc.json", headers: [("if-none-match", etag)])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.isEmpty)

            _ = try await server.http(.PUT, "/doc/b.json", body: "2")
            let changed = try await server.http(.GET, "/doc.json", headers: [("if-none-match", etag)])
            #expect(changed.status == 200)
            #expect(changed.json == ["a": 1, "b": 2])
            let newTag = try #require(changed.header("ETag"))
            #expect(newTag != etag)
            #expect(try await server.http(.GET, "/doc.json", headers: [("if-none-match", newTag)]).status == 304)
        }
    }

    @Test func ifMatchWritesWhenCurrentAndAnswersTheNewETag() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/doc.json", body: #"{"a":1}"#)
            let etag = try await Self.etag(server, "/doc.json")
            let write = try await server.http(.PUT, "/doc.json", headers: [("if-match", etag)], body: #"{"a":2}"#)
            #expect(write.status == 200)
            #expect(write.json == ["a": 2])
            let newTag = try #require(write.header("ETag"))
            #expect(newTag != etag)
            #expect(newTag == (try await Self.etag(server, "/doc.json")))
        }
    }

    @Test func ifMatchMismatchAnswers412WithTheCurrentValueAndETag() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/doc.json", body: #"{"a":1}"#)
            let stale = try await Self.etag(server, "/doc.json")
            _ = try await server.http(.PUT, "/doc/a.json", body: "5")
            let current = try await Self.etag(server, "/doc.json")

            let write = try await server.http(.PUT, "/doc.json", headers: [("if-match", stale)], body: #"{"a":9}"#)
            #expect(write.status == 412)
            #expect(write.json == ["a": 5])
            #expect(write.header("ETag") == current)
            #expect(try await server.http(.GET, "/doc.json").json == ["a": 5])

            let bogus = try await server.http(.PUT, "/doc.json", headers: [("if-match", "not-an-etag")], body: "1")
            #expect(bogus.status == 412)
        }
    }

    @Test func nullETagMatchesOnlyAbsentData() async throws {
        try await withTestServer { server in
            let create = try await server.http(
                .PUT, "/new.json", headers: [("if-match", "null_etag")], body: #""made""#)
            #expect(create.status == 200)
            #expect(create.json == "made")
            #expect(create.header("ETag") != nil && create.header("ETag") != "null_etag")

            let again = try await server.http(
                .PUT, "/new.json", headers: [("if-match", "null_etag")], body: #""twice""#)
            #expect(again.status == 412)
            #expect(again.json == "made")
            #expect(try await server.http(.GET, "/new.json").json == "made")

            let delete = try await server.http(
                .DELETE, "/new.json", headers: [("if-match", try await Self.etag(server, "/new.json"))])
            #expect(delete.status == 200)
            #expect(delete.header("ETag") == "null_etag")
            #expect(try await server.http(.GET, "/new.json").body == "null")
        }
    }
}
