import Rules
import Testing
import Tree

/// A rough look at what a check costs once the rules are compiled. Nothing here asserts a time:
/// it checks that repeated checks give the same answers, and prints what they cost.
struct EvaluationCostTests {
    @Test func repeatedChecksAreStableAndCheap() throws {
        let rules = try RulesDocument(
            parsing: """
                {
                  "rules": {
                    "rooms": {
                      "$room": {
                        ".read": "data.child('members').hasChild(auth.uid)",
                        "messages": {
                          "$message": {
                            ".write": "root.child('rooms/' + $room + '/members/' + auth.uid).val() === true",
                            ".validate": "newData.hasChildren(['author', 'text', 'at'])",
                            "author": { ".validate": "newData.val() === auth.uid" },
                            "text": { ".validate": "newData.isString() && newData.val().length <= 500" },
                            "at": { ".validate": "newData.val() <= now" },
                            "$other": { ".validate": false }
                          }
                        }
                      }
                    }
                  }
                }
                """)
        var members: [(ChildKey, Node)] = []
        for index in 0..<1_000 { members.append((ChildKey("user\(index)"), Node(.bool(true)))) }
        let root = Node(children: [
            (
                ChildKey("rooms"),
                Node(children: [(ChildKey("r1"), Node(children: [(ChildKey("members"), Node(children: members))]))])
            )
        ])
        let auth = AuthContext(uid: "user500", provider: "password")
        let message = try Node(json: ["author": "user500", "text": "hello", "at": 1])
        let (room, target): (Path, Path) = ("rooms/r1/messages", "rooms/r1/messages/m1")
        let clock = ContinuousClock()
        let checks = 20_000
        var reads = 0
        var writes = 0
        let readTime = clock.measure {
            for _ in 0..<checks where rules.canRead(room, auth: auth, root: root, now: testNow).isAllowed { reads += 1 }
        }
        let writeTime = clock.measure {
            for _ in 0..<checks where rules.canSet(target, to: message, auth: auth, root: root, now: testNow).isAllowed
            {
                writes += 1
            }
        }
        #expect(reads == checks)
        #expect(writes == checks)
        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        print("rules evaluation (\(build) build): read \(readTime / checks), write \(writeTime / checks) per check")
    }
}
