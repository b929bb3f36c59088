import CanopyTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Canopy

/// ``PostModel`` against a real server: every kind of callback changes the model's state, on the
/// main actor, whatever the database's callback queue.
@Suite(.timeLimit(.minutes(2)))
struct MainActorCallbackTests {
    /// A client of the server's namespace `test`, with its own connection and state.
    static func makeDatabase(_ server: TestServer) -> Database {
        Database(url: "http://127.0.0.1:\(server.port)?ns=test", connector: Database.realtimeConnector)
    }

    @Test func listenersAndReadsChangeTheModelOnTheMainActor() async throws {
        try await withTestServer { server in
            let other = Self.makeDatabase(server).reference()
            try await other.child("posts/p1").setValue(["title": "Hello", "author": "ada"])
            try await other.child("post-comments/p1").setValue([
                "c1": ["text": "first", "votes": 3], "c2": ["text": "second", "votes": 1],
            ])
            let model = await PostModel(database: Self.makeDatabase(server), postID: "p1")
            await model.startListening()
            await model.readOnce()
            #expect(await eventually { await model.comments.map(\.key) == ["c1", "c2"] })
            #expect(await eventually { await model.title == "Hello" })
            #expect(await eventually { await model.previousKeys == ["c2": "(first)", "c1": "c2"] })
            #expect(await eventually { await model.connected.last == true })
            #expect(await eventually { await model.authStates == [.signedOut] })
            #expect(await eventually { await model.firstAuthor == "ada" })
            #expect(await eventually { await model.firstComment == "c1" })
            #expect(await eventually { await model.lowestVoted?.key == "c2" })
            #expect(await model.lowestVoted?.previous == nil)
            #expect(await eventually { await model.fetchedTitle == "Hello" })
            #expect(await eventually { await model.serverTitle == "Hello" })
            let synced = SnapshotMetadata(isFromCache: false, hasPendingWrites: false)
            #expect(await eventually { await model.postMetadata.last == synced })
            #expect(await eventually { await model.errors.count == 2 })
            let errors = await model.errors
            #expect(
                errors.contains { $0.hasPrefix("listen: ") } && errors.contains { $0.hasPrefix("single: ") },
                "\(errors)")

            try await other.child("post-comments/p1/c2/text").setValue("edited")
            try await other.child("post-comments/p1/c1").removeValue()
            try await other.child("posts/p1/title").setValue("Hello again")
            #expect(await eventually { await model.changedComments == ["c2"] })
            #expect(await eventually { await model.removedComments == ["c1"] })
            #expect(await eventually { await model.comments.map(\.key) == ["c2"] })
            #expect(await eventually { await model.title == "Hello again" })

            await model.stopListening()
            try await other.child("posts/p1/title").setValue("unseen")
            try await other.child("post-comments/p1/c3").setValue(["text": "unseen", "votes": 0])
            #expect(try await model.postRef.child("title").getData().value as? String == "unseen")
            #expect(await model.title == "Hello again")
            #expect(await model.postMetadata.last == synced)
            #expect(await model.comments.map(\.key) == ["c2"])
            #expect(await model.offMainQueue == 0)
        }
    }

    @Test func writeCompletionsChangeTheModelOnTheMainActor() async throws {
        try await withTestServer { server in
            let database = Self.makeDatabase(server)
            let model = await PostModel(database: database, postID: "p2")
            try await database.reference(withPath: "drafts/ada").setValue("draft")
            await model.startListening()
            #expect(await eventually { await model.connected.last == true })
            await model.write(title: "Draft", uid: "ada")
            let writes = ["set", "set with priority", "priority", "update", "remove"]
            #expect(await eventually { await model.completions.count == writes.count + 1 })
            // Sent writes are answered in the order they were made; the refused one at once.
            let completions = await model.completions
            #expect(
                completions.filter { $0 != "refused" } == writes && completions.contains("refused"), "\(completions)")
            #expect(await model.title == "Draft")
            // The write's local event says it is pending; its acknowledgement, a metadata-only event, that it is not.
            #expect(await model.postMetadata.contains { $0.hasPendingWrites })
            #expect(await eventually { await model.postMetadata.last?.hasPendingWrites == false })

            await model.star(uid: "ada")
            #expect(await eventually { await model.transaction?.committed == true })
            #expect(await model.transaction?.stars == 1)

            await model.setUpPresence(uid: "ada")
            let presence = [
                "onDisconnect set", "onDisconnect set with priority", "onDisconnect update", "onDisconnect remove",
                "onDisconnect cancel",
            ]
            #expect(await eventually { await model.completions.count == completions.count + presence.count })
            #expect(await model.completions == completions + presence)

            #expect(try await model.publish(title: "Published") == "Published")
            let stored = try await server.http(.GET, "/posts/p2.json?ns=test")
            let post = try JSONSerialization.jsonObject(with: Data(stored.body.utf8)) as? [String: Any]
            #expect(post?["title"] as? String == "Published" && post?["published"] as? Bool == true)
            #expect(post?["body"] as? String == "text" && post?["starCount"] as? Int == 1)
            #expect(await model.errors.filter { !$0.hasPrefix("listen: ") }.isEmpty)
            #expect(await model.offMainQueue == 0)
        }
    }

    /// With a queue of the app's own, blocks written on the main actor still run there, and the
    /// others run on the queue; each in the order of the events.
    @Test func withACustomCallbackQueueMainActorBlocksStayOnTheMainActorAndOthersRunOnTheQueue() async throws {
        try await withTestServer { server in
            let database = Self.makeDatabase(server)
            let queue = DispatchQueue(label: "app.callbacks")
            let queueKey = DispatchSpecificKey<Bool>()
            queue.setSpecific(key: queueKey, value: true)
            database.callbackQueue = queue
            let model = await PostModel(database: database, postID: "p3")
            await model.startListening()
            let onQueue = Mutex<[String]>([])
            database.reference(withPath: "posts/p3/title").observe(.value) { snapshot in
                let here = DispatchQueue.getSpecific(key: queueKey) == true ? "queue" : "elsewhere"
                onQueue.withLock { $0.append("\(here) \(snapshot.value as? String ?? "null")") }
            }
            for title in ["one", "two", "three"] {
                try await database.reference(withPath: "posts/p3/title").setValue(title)
            }
            #expect(await eventually { onQueue.withLock { $0.last } == "queue three" })
            let seen = onQueue.withLock { $0 }
            #expect(seen.allSatisfy { $0.hasPrefix("queue ") }, "\(seen)")
            #expect(seen.filter { $0 != "queue null" } == ["queue one", "queue two", "queue three"], "\(seen)")
            #expect(await eventually { await model.title == "three" })
            #expect(await model.offMainQueue == 0)
        }
    }
}
