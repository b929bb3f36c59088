import Testing
import Tree

struct PathTests {
    @Test func parsingIgnoresEmptySegments() {
        let expected = Path(keys: ["a", "b"] as [ChildKey])
        for text in ["a/b", "/a/b", "a/b/", "/a//b/", "//a///b//"] {
            let path = Path(text)
            #expect(path == expected, "\(text)")
            #expect(Array(path.components) == ["a", "b"])
            #expect(path.count == 2)
        }
        for text in ["", "/", "///"] {
            #expect(Path(text) == .root)
            #expect(Path(text).isEmpty)
        }
    }

    @Test func validatingAcceptsGoodPathsAndDropsEmptySegments() throws {
        #expect(try Path(validating: "/users//ada/") == Path("users/ada"))
        #expect(try Path(validating: "") == .root)
        #expect(try Path(validating: "/") == .root)
        #expect(try Path(validating: "a b/ü/🌳/-0").count == 4)
    }

    @Test func validatingRejectsBadKeysNamingPathAndKey() {
        #expect(throws: TreeError.invalidPath("users/a.b", reason: #"key "a.b" contains '.'"#)) {
            try Path(validating: "users/a.b")
        }
        for character in ["$", "#", "[", "]"] {
            let text = "a/b\(character)/c"
            #expect(throws: TreeError.self, "\(text)") { try Path(validating: text) }
        }
        #expect(throws: TreeError.self) { try Path(validating: "a/\u{7F}") }
        let long = String(repeating: "k", count: 769)
        #expect(throws: TreeError.invalidPath("a/\(long)", reason: "key \"\(long)\" is 769 bytes long (at most 768)")) {
            try Path(validating: "a/\(long)")
        }
    }

    @Test func depthLimitIs32Keys() throws {
        #expect(TreeLimits.maxDepth == 32)
        let deepest = (1...32).map { "k\($0)" }.joined(separator: "/")
        #expect(try Path(validating: deepest).count == 32)
        let tooDeep = deepest + "/k33"
        #expect(throws: TreeError.invalidPath(tooDeep, reason: "is 33 levels deep (at most 32)")) {
            try Path(validating: tooDeep)
        }
    }

    @Test func reservedKeysOnlyWhereAllowed() throws {
        #expect(Array(try Path(validating: ".info/connected").components) == [.info, "connected"])
        #expect(try Path(validating: ".info") == Path(keys: [ChildKey.info]))
        #expect(Array(try Path(validating: "a/b/.priority").components) == ["a", "b", .priority])
        #expect(try Path(validating: ".priority") == Path(keys: [ChildKey.priority]))
        for text in ["a/.info", "a/.info/b", ".priority/a", "a/.priority/b", ".value", "a/.sv", ".info/.info"] {
            #expect(throws: TreeError.self, "\(text)") { try Path(validating: text) }
        }
    }

    @Test func frontBackAndPopFront() {
        let path = Path("a/b/c")
        #expect(path.front == "a")
        #expect(path.back == "c")
        #expect(path.popFront() == Path("b/c"))
        #expect(path.popFront().popFront().popFront() == .root)
        #expect(Path.root.popFront() == .root)
        #expect(Path.root.front == nil)
        #expect(Path.root.back == nil)
        // A popped path is equal to, and hashes like, the same path built fresh.
        #expect(Set([path.popFront(), Path("b/c")]).count == 1)
    }

    @Test func parentAndChild() {
        #expect(Path("a/b/c").parent == Path("a/b"))
        #expect(Path("a").parent == .root)
        #expect(Path.root.parent == nil)
        #expect(Path("a/b").child(ChildKey("c")) == Path("a/b/c"))
        #expect(Path.root.child(ChildKey("a")) == Path("a"))
        #expect(Path("a").child(Path("b/c")) == Path("a/b/c"))
        #expect(Path("a").child(Path.root) == Path("a"))
        #expect(Path.root.child(Path("b/c")) == Path("b/c"))
        // Building on a popped path does not resurrect the dropped key.
        #expect(Path("x/y").popFront().child(ChildKey("z")) == Path("y/z"))
        #expect(Path("x/y").popFront().child(Path("z")) == Path("y/z"))
    }

    @Test func containsIsKeyWise() {
        #expect(Path("a").contains(Path("a/b")))
        #expect(Path("a").contains(Path("a")))
        #expect(Path.root.contains(Path("a/b")))
        #expect(Path.root.contains(.root))
        #expect(!Path("a/b").contains(Path("a")))
        #expect(!Path("a").contains(Path("ab")))
        #expect(!Path("a/b").contains(Path("a/c/b")))
        #expect(!Path("a").contains(.root))
        #expect(Path("x/a").popFront().contains(Path("a/b")))
    }

    @Test func relativePath() {
        #expect(Path.relative(from: Path("a"), to: Path("a/b/c")) == Path("b/c"))
        #expect(Path.relative(from: Path("a/b"), to: Path("a/b")) == .root)
        #expect(Path.relative(from: .root, to: Path("a/b")) == Path("a/b"))
    }

    @Test func descriptionForms() {
        #expect(Path("a/b").description == "/a/b")
        #expect(Path.root.description == "/")
        #expect(Path("a/b").wireString == "a/b")
        #expect(Path.root.wireString == "")
        #expect("\(Path("//x//y//"))" == "/x/y")
    }

    @Test func orderIsKeyWiseWithParentsFirst() {
        let expected: [Path] = [.root, "a", "a/2", "a/10", "a/10/x", "a/b", "b"]
        #expect(expected.reversed().sorted() == expected)
        #expect(!(Path("a") < Path("a")))
    }

    @Test func stringLiteralIsUnvalidated() {
        let path: Path = "a/.b"
        #expect(Array(path.components) == ["a", ".b"])
    }
}
