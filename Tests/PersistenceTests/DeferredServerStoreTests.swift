import Foundation
import Persistence
import ServerStorage
import Synchronization
import Testing
import Tree

struct DeferredServerStoreTests {
    @Test func readsAsItsInitialSettingsAndCreatesNothingUntilWritten() async throws {
        try await withStoreFile { file in
            let rules: JSONValue = .string(#"{"rules":{".read":true}}"#)
            let store = DeferredServerStore(initialSettings: ["rules": rules]) { () throws(StoreError) in
                try SQLiteServerStore(path: file)
            }
            #expect(try store.loadTree() == .empty)
            #expect(try store.setting("rules") == rules)
            #expect(try store.setting("other") == nil)
            try store.commit([])
            #expect(!store.isCreated)
            #expect(!FileManager.default.fileExists(atPath: file))

            try store.commit([try StoredWrite("a/b", 1)])
            #expect(store.isCreated)
            #expect(try store.loadTree() == (try Node(json: ["a": ["b": 1]])))
            try store.close()
            // The file holds the write and the settings the store was created with.
            let reopened = try SQLiteServerStore(path: file)
            #expect(try reopened.loadTree() == (try Node(json: ["a": ["b": 1]])))
            #expect(try reopened.setting("rules") == rules)
        }
    }

    @Test func aSettingCreatesItAndAFailedCreationIsTriedAgain() throws {
        let unavailable = StoreError.cannotOpen(file: "deferred", reason: "unavailable")
        let attempts = Mutex(0)
        let store = DeferredServerStore { () throws(StoreError) -> any ServerStore in
            let attempt = attempts.withLock { attempts in
                attempts += 1
                return attempts
            }
            if attempt == 1 { throw unavailable }
            return InMemoryServerStore()
        }
        #expect(throws: unavailable) { try store.setSetting("rules", .string("{}")) }
        #expect(!store.isCreated)
        try store.setSetting("rules", .string("{}"))
        #expect(store.isCreated)
        #expect(try store.setting("rules") == .string("{}"))
        #expect(attempts.withLock { $0 } == 2)
    }
}
