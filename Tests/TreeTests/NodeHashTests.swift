import Testing
import Tree

/// Expected hashes were computed outside Swift, from the canonical strings in the comments, with
/// `python3 -c 'import hashlib, base64; print(base64.b64encode(hashlib.sha1(S.encode()).digest()).decode())'`
/// (numbers as `struct.pack(">d", x).hex()`).
struct NodeHashTests {
    @Test func emptyNodeHashesToEmptyString() throws {
        #expect(Node.empty.hash == "")
        #expect(try Node(jsonText: "{}").hash == "")
    }

    @Test(arguments: [
        // string:hello
        (Node(.string("hello")), "z6sRbrNLwbHX5fdjpvsTtWgXUFc="),
        // string:héllo 🌳  (hashed as UTF-8)
        (Node(.string("héllo 🌳")), "kxEDRWU6mkTat9NzHPCpm3IzWcw="),
        // number:3ff0000000000000  (integers hash as doubles too)
        (Node(.number(1)), "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ="),
        // number:c004000000000000
        (Node(.number(-2.5)), "eBj7htp2uFU6m+ykmQDcicyETbY="),
        // number:4278bcfe56800000
        (Node(.number(1_700_000_000_000)), "vzg0cpxiAeqQeyjkTe0gblJSTn8="),
        // number:0000000000000000  (all sixteen digits, zeros included)
        (Node(.number(0)), "7ysMph9WPitGP7poMnMHMVPtUlI="),
        // number:8000000000000000
        (Node(.number(-0.0)), "m/gA365Q5OBo06Bg8wdybAAiMSQ="),
        // number:3fb999999999999a
        (Node(.number(0.1)), "wtQjBi5TBE+ZcdekL6INiSeCSQI="),
        // boolean:true
        (Node(.bool(true)), "E5z61QM0lN/U2WsOnusszCTkR8M="),
        // boolean:false
        (Node(.bool(false)), "aSSNoqcS4oQwJ2xxH20rvpp3zP0="),
        // priority:number:4000000000000000:number:3ff0000000000000
        (Node(.number(1), priority: .number(2)), "FvGzv2x5RbRTIc6uhMwY3pMW2oU="),
        // priority:number:3ff8000000000000:string:hello
        (Node(.string("hello"), priority: .number(1.5)), "GoIOFySxSwenV92GViXbTT6gdW8="),
        // priority:string:p:string:x
        (Node(.string("x"), priority: .string("p")), "Ee+tTXV5cvjTnBMuKXMyU8fA5VY="),
    ])
    func leafHash(node: Node, expected: String) {
        #expect(node.hash == expected)
    }

    @Test func childrenHashInPriorityOrder() throws {
        // a has priority 2, b priority 1: priority order b, a is the reverse of key order.
        // H(a) = hash of priority:number:4000000000000000:number:3ff0000000000000
        // H(b) = hash of priority:number:3ff0000000000000:number:4000000000000000
        // :b:iiz9CIvYWkKdETTpjVFBJNx1SiI=:a:FvGzv2x5RbRTIc6uhMwY3pMW2oU=
        let node = try Node(json: ["a": [".value": 1, ".priority": 2], "b": [".value": 2, ".priority": 1]])
        #expect(node.child("a").hash == "FvGzv2x5RbRTIc6uhMwY3pMW2oU=")
        #expect(node.child("b").hash == "iiz9CIvYWkKdETTpjVFBJNx1SiI=")
        #expect(node.hash == "/3lk7Vfl5OYG6Kw2SkiPXNeExPw=")
    }

    @Test func childrenWithoutPriorityComeFirst() throws {
        // c has no priority, so it precedes b (priority 1) and a (priority 2); H(c) = hash of string:c
        // :c:EMllr+JgyWuIFhd9ddBmO2zFPpI=:b:iiz9CIvYWkKdETTpjVFBJNx1SiI=:a:FvGzv2x5RbRTIc6uhMwY3pMW2oU=
        let node = try Node(json: [
            "a": [".value": 1, ".priority": 2], "b": [".value": 2, ".priority": 1], "c": "c",
        ])
        #expect(node.hash == "o3ER1/r0moYoji2UarROlEJWXR0=")
    }

    @Test func childrenWithoutPrioritiesHashInKeyOrder() throws {
        // Integer keys in numeric order: 9 before 10.
        // :9:M7Kyw8zsPkNHRw35uJ1vdPacr90=:10:+r5aI9HvKKagELki8SYKBk0q7D4=
        let node = try Node(json: ["10": 10, "9": 9])
        #expect(node.hash == "e+v2Zx1+33HoWjMPR3N08WhjITY=")
    }

    @Test func nestedChildrenWithPriority() throws {
        // inner: :y:spma6tfW0Nl5KpHLWlVJbGOveJM=  → 6n/0qSvXe6kNCO8GCEX/izOnshw=
        // outer: priority:string:top::x:6n/0qSvXe6kNCO8GCEX/izOnshw=
        let node = try Node(json: ["x": ["y": "z"], ".priority": "top"])
        #expect(node.child("x").hash == "6n/0qSvXe6kNCO8GCEX/izOnshw=")
        #expect(node.hash == "6bmIJcraJFM9tBep6VXBZ2D9PR4=")
    }

    @Test func absentChildrenContributeNothing() throws {
        // :a:YPVfR2bXt/lcDjiQZ8pOkAd3qkQ=
        let expected = "gIphxiFGusLh2VwSNVKSvNu90m4="
        #expect(try Node(json: ["a": 1]).hash == expected)
        #expect(try Node(json: ["a": 1, "b": nil, "c": [:]]).hash == expected)
        let twoChildren = try Node(json: ["a": 1, "b": 2])
        #expect(twoChildren.updatingChild("b", to: .empty).hash == expected)
    }

    @Test func hashFollowsUpdates() throws {
        let node = try Node(json: ["a": 1])
        #expect(node.hash == "gIphxiFGusLh2VwSNVKSvNu90m4=")
        let changed = node.updatingChild("a", to: Node(.number(2)))
        #expect(changed.hash != node.hash)
        #expect(changed.updatingChild("a", to: Node(.number(1))).hash == node.hash)
        #expect(node.withPriority(.string("p")).hash != node.hash)
        // The original's cached hash is unaffected by derived nodes.
        #expect(node.hash == "gIphxiFGusLh2VwSNVKSvNu90m4=")
    }
}
