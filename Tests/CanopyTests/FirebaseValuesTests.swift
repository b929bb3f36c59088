import CanopyTesting
import Foundation
import Testing

@testable import Canopy

/// Firebase's ways of reading and writing values an app written against it uses: children as
/// enumerators, `ServerValue.increment` with an `NSNumber`, `Database.Encoder` and
/// `Database.Decoder`, `@ServerTimestamp`; each against a real server.
@Suite(.timeLimit(.minutes(2)))
struct FirebaseValuesTests {
    /// The server's data at `path` (namespace `test`), as JSON text.
    static func stored(_ server: TestServer, _ path: String) async throws -> String {
        try await server.http(.GET, "/\(path).json?ns=test").body
    }

    @Test func childrenAreAnEnumeratorOfSnapshotsAndOfMutableData() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "scores")
            try await ref.setValue(["a": 3, "b": 1, "c": 2])
            let snapshot = try await ref.queryOrderedByValue().getData()
            var keys: [String] = []
            for case let child as DataSnapshot in snapshot.children { keys.append(child.key) }
            #expect(keys == ["b", "c", "a"])
            #expect((snapshot.children.allObjects as? [DataSnapshot])?.map(\.key) == ["b", "c", "a"])
            var count = 0
            for child in snapshot.children where child is DataSnapshot { count += 1 }
            #expect(count == 3)
            let enumerator = snapshot.children
            #expect((enumerator.nextObject() as? DataSnapshot)?.ref.url == ref.child("b").url)

            try await ref.runTransactionBlock { data in
                for case let child as MutableData in data.children { child.value = (child.value as? Int ?? 0) * 10 }
                return .success(withValue: data)
            }
            #expect(try await Self.stored(server, "scores") == #"{"a":30,"b":10,"c":20}"#)
        }
    }

    @Test func incrementTakesAnNSNumber() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "visits")
            try await ref.setValue(ServerValue.increment(NSNumber(value: 5)))
            try await ref.setValue(ServerValue.increment(NSNumber(value: 5)))
            try await ref.setValue(ServerValue.increment(NSNumber(value: 0.5)))
            #expect(try await Self.stored(server, "visits") == "10.5")
        }
    }

    struct Post: Codable, Equatable {
        var postTitle: String
        var publishedAt: Date
        var tags: [String]?
    }

    @Test func databaseEncoderAndDecoderApplyTheirKeyAndDateStrategies() async throws {
        try await withServer { server in
            let posts = makeDatabase(server).reference(withPath: "posts")
            let ref = posts.child("p1")
            let post = Post(postTitle: "Hello", publishedAt: Date(timeIntervalSince1970: 1_700_000_000.5), tags: nil)
            let encoder = Database.Encoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.dateEncodingStrategy = .millisecondsSince1970
            let saved = Recorder<String>()
            try ref.setValue(from: post, encoder: encoder) { error in saved.record("\(error == nil)") }
            #expect(await saved.wait { $0 == ["true"] })
            #expect(
                try await Self.stored(server, "posts/p1") == #"{"post_title":"Hello","published_at":1700000000500}"#)

            let snapshot = try await ref.getData()
            let decoder = Database.Decoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .millisecondsSince1970
            #expect(try snapshot.data(as: Post.self, decoder: decoder) == post)
            #expect(try decoder.decode(Post.self, from: snapshot.value ?? NSNull()) == post)
            #expect(throws: DecodingError.self) { try snapshot.data(as: Post.self) }

            // Encoded by hand, as Firebase's guides do, then written as any value.
            let value = try encoder.encode(post)
            try await posts.child("p2").setValue(value)
            #expect(
                try await Self.stored(server, "posts/p2") == #"{"post_title":"Hello","published_at":1700000000500}"#)

            let nothing = try await posts.child("none").getData()
            #expect(try nothing.data(as: Post?.self) == nil)
            #expect(throws: DecodingError.self) { try nothing.data(as: Post.self) }
        }
    }

    struct Note: Codable {
        var text: String
        @ServerTimestamp var createdAt: Date? = nil
    }

    @Test func aServerTimestampIsFilledInByTheServer() async throws {
        try await withServer { server in
            let ref = makeDatabase(server).reference(withPath: "notes")
            let before = Date()
            try ref.child("n1").setValue(from: Note(text: "now"))
            let snapshot = try await ref.child("n1").getData()
            let stored = (snapshot.value as? [String: Any])?["createdAt"] as? Double
            #expect(stored.map { $0 >= (before.timeIntervalSince1970 - 600) * 1000 } == true, "\(snapshot)")
            let note = try snapshot.data(as: Note.self)
            #expect(note.createdAt.map { ($0.timeIntervalSince1970 * 1000).rounded() } == stored)

            let given = Date(timeIntervalSince1970: 1_600_000_000)
            try await ref.child("n2").setValue(["text": "given"])
            try ref.child("n3").setValue(from: Note(text: "dated", createdAt: given))
            #expect(try await ref.child("n2").getData().data(as: Note.self).createdAt == nil)
            #expect(try await ref.child("n3").getData().data(as: Note.self).createdAt == given)
            #expect(try await Self.stored(server, "notes/n3/createdAt") == "1600000000000")
        }
    }
}
