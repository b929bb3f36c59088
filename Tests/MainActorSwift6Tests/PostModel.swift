import Canopy
import Dispatch
import Foundation

/// A post screen's model as an app writes it: a `@MainActor` class whose SDK callbacks change its
/// own state, in the forms of Firebase's Realtime Database guides. `MainActorSwift6Tests` compiles
/// this file in the Swift 6 language mode, `MainActorSwift5Tests` (a link to it) in Swift 5 mode
/// with complete concurrency checking; both without a warning.
@MainActor
final class PostModel {
    let database: Database
    let ref: DatabaseReference
    let postRef: DatabaseReference
    let commentsRef: DatabaseReference
    var refHandle: DatabaseHandle = 0
    var metadataHandle: DatabaseHandle = 0

    var title: String?
    var comments: [DataSnapshot] = []
    var changedComments: [String] = []
    var removedComments: [String] = []
    var previousKeys: [String: String] = [:]
    var connected: [Bool] = []
    var authStates: [AuthState] = []
    var firstAuthor: String?
    var firstComment: String?
    var lowestVoted: (key: String, previous: String?)?
    var fetchedTitle: String?
    var serverTitle: String?
    var postMetadata: [SnapshotMetadata] = []
    var errors: [String] = []
    var completions: [String] = []
    var transaction: (committed: Bool, stars: Int?)?
    /// Callbacks that found themselves off the main queue (the main actor's executor).
    var offMainQueue = 0

    init(database: Database, postID: String) {
        self.database = database
        ref = database.reference()
        postRef = ref.child("posts").child(postID)
        commentsRef = ref.child("post-comments").child(postID)
    }

    private func checkMainQueue() {
        if DispatchQueue.getSpecific(key: mainQueueKey) == nil { offMainQueue += 1 }
    }

    // MARK: Reading

    func startListening() {
        refHandle = postRef.observe(
            DataEventType.value,
            with: { snapshot in
                self.checkMainQueue()
                let postDict = snapshot.value as? [String: Any] ?? [:]
                self.title = postDict["title"] as? String
            })
        commentsRef.observe(
            .childAdded,
            with: { (snapshot) -> Void in
                self.checkMainQueue()
                self.comments.append(snapshot)
            })
        commentsRef.observe(
            .childChanged,
            with: { [weak self] snapshot in
                guard let self else { return }
                self.checkMainQueue()
                self.changedComments.append(snapshot.key)
            })
        commentsRef.observe(
            .childRemoved,
            with: { (snapshot) -> Void in
                self.checkMainQueue()
                let index = self.comments.firstIndex { $0.key == snapshot.key }
                if let index { self.comments.remove(at: index) }
                self.removedComments.append(snapshot.key)
            })
        commentsRef.queryOrdered(byChild: "votes").observe(
            .childAdded,
            andPreviousSiblingKeyWith: {
                snapshot, previousKey in
                self.checkMainQueue()
                self.previousKeys[snapshot.key] = previousKey ?? "(first)"
            })
        metadataHandle = postRef.observe(.value, includeMetadataChanges: true) { snapshot in
            self.checkMainQueue()
            self.postMetadata.append(snapshot.metadata)
        }
        let connectedRef = database.reference(withPath: ".info/connected")
        connectedRef.observe(
            .value,
            with: { snapshot in
                self.checkMainQueue()
                if snapshot.value as? Bool ?? false {
                    self.connected.append(true)
                } else {
                    self.connected.append(false)
                }
            })
        database.observeAuthState { state in
            self.checkMainQueue()
            self.authStates.append(state)
        }
        commentsRef.queryOrderedByKey().queryOrderedByValue().observe(
            .value,
            with: { _ in
                self.errors.append("an invalid query delivered data")
            }
        ) { error in
            self.checkMainQueue()
            self.errors.append("listen: \(error.localizedDescription)")
        }
    }

    func stopListening() {
        postRef.removeObserver(withHandle: refHandle)
        postRef.removeObserver(withHandle: metadataHandle)
        commentsRef.removeAllObservers()
    }

    func readOnce() {
        postRef.child("author").observeSingleEvent(
            of: .value,
            with: { snapshot in
                self.checkMainQueue()
                self.firstAuthor = snapshot.value as? String ?? ""
            }
        ) { error in
            self.errors.append(error.localizedDescription)
        }
        commentsRef.queryOrderedByKey().queryLimited(toFirst: 1).observeSingleEvent(of: .childAdded) { snapshot in
            self.checkMainQueue()
            self.firstComment = snapshot.key
        }
        commentsRef.queryOrdered(byChild: "votes").observeSingleEvent(
            of: .childAdded,
            andPreviousSiblingKeyWith: {
                snapshot, previousKey in
                self.checkMainQueue()
                self.lowestVoted = (snapshot.key, previousKey)
            }
        ) { error in
            self.errors.append(error.localizedDescription)
        }
        postRef.child("title").getData(completion: { error, snapshot in
            self.checkMainQueue()
            guard error == nil else {
                self.errors.append(error!.localizedDescription)
                return
            }
            self.fetchedTitle = snapshot?.value as? String ?? "Unknown"
        })
        postRef.child("title").getData(source: .server) { error, snapshot in
            self.checkMainQueue()
            if let error {
                self.errors.append(error.localizedDescription)
            } else {
                self.serverTitle = snapshot?.value as? String
            }
        }
        ref.child("nowhere").queryLimited(toFirst: 1).queryLimited(toFirst: 2).observeSingleEvent(
            of: .value, with: { _ in self.errors.append("an invalid query delivered data") },
            withCancel: { error in
                self.checkMainQueue()
                self.errors.append("single: \(error.localizedDescription)")
            })
    }

    // MARK: Writing

    func write(title: String, uid: String) {
        postRef.setValue(["title": title, "author": uid, "stars": 0]) { (error: Error?, ref: DatabaseReference) in
            self.checkMainQueue()
            if let error = error {
                self.completions.append("set failed: \(error)")
            } else {
                self.completions.append("set")
            }
        }
        postRef.child("rank").setValue(
            1, andPriority: 10,
            withCompletionBlock: { error, _ in
                self.checkMainQueue()
                self.completions.append(error == nil ? "set with priority" : "\(error!)")
            })
        postRef.child("rank").setPriority(20) { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "priority" : "\(error!)")
        }
        let childUpdates: [String: Any] = [
            "/posts/\(postRef.key ?? "")/body": "text", "/user-posts/\(uid)/last": title,
        ]
        ref.updateChildValues(
            childUpdates,
            withCompletionBlock: { error, _ in
                self.checkMainQueue()
                self.completions.append(error == nil ? "update" : "\(error!)")
            })
        ref.child("drafts").child(uid).removeValue { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "remove" : "\(error!)")
        }
        ref.child("posts").child("a.b").setValue(1) { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "an invalid path was written" : "refused")
        }
    }

    func star(uid: String) {
        postRef.runTransactionBlock({ (currentData: MutableData) -> TransactionResult in
            if var post = currentData.value as? [String: Any] {
                var stars: [String: Bool] = post["stars"] as? [String: Bool] ?? [:]
                var starCount = post["starCount"] as? Int ?? 0
                if stars[uid] != nil {
                    starCount -= 1
                    stars.removeValue(forKey: uid)
                } else {
                    starCount += 1
                    stars[uid] = true
                }
                post["starCount"] = starCount
                post["stars"] = stars
                currentData.value = post
                return TransactionResult.success(withValue: currentData)
            }
            return TransactionResult.success(withValue: currentData)
        }) { error, committed, snapshot in
            self.checkMainQueue()
            if let error = error {
                self.errors.append(error.localizedDescription)
            }
            let post = snapshot?.value as? [String: Any]
            self.transaction = (committed, post?["starCount"] as? Int)
        }
    }

    func setUpPresence(uid: String) {
        let presenceRef = ref.child("presence").child(uid)
        presenceRef.onDisconnectSetValue("I disconnected!") { (error: Error?, ref: DatabaseReference) in
            self.checkMainQueue()
            self.completions.append(error == nil ? "onDisconnect set" : "\(error!)")
        }
        presenceRef.onDisconnectSetValue("I disconnected", andPriority: 1) { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "onDisconnect set with priority" : "\(error!)")
        }
        ref.child("last-seen").onDisconnectUpdateChildValues([uid: ServerValue.timestamp()]) { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "onDisconnect update" : "\(error!)")
        }
        presenceRef.onDisconnectRemoveValue { error, reference in
            self.checkMainQueue()
            if let error = error {
                self.completions.append("Could not establish onDisconnect event: \(error)")
            } else {
                self.completions.append("onDisconnect remove")
            }
        }
        presenceRef.cancelDisconnectOperations { error, _ in
            self.checkMainQueue()
            self.completions.append(error == nil ? "onDisconnect cancel" : "\(error!)")
        }
    }

    /// The `async` forms, awaited on the main actor.
    func publish(title: String) async throws -> String? {
        try await postRef.child("title").setValue(title)
        let ref: DatabaseReference = try await postRef.updateChildValues(["published": true])
        let snapshot = await ref.observeSingleEvent(of: .value)
        return (snapshot.value as? [String: Any])?["title"] as? String
    }
}

/// Marks the main queue, where the main actor runs, for ``PostModel/checkMainQueue()``.
let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()
