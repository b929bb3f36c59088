import CanopyTesting
import Foundation
import Transport
import Tree

/// What the server must do with a generated input.
enum Verdict: String, Sendable, CaseIterable {
    /// A valid request: it must be accepted.
    case accepted
    /// An invalid one: it must be refused with an error (or the connection closed).
    case refused
    /// A random mutation of a valid one: either, as long as nothing invalid is stored.
    case either
}

/// One generated input: what to send, which family of inputs it comes from, and what it must get.
struct GeneratedInput: Sendable {
    var family: String
    var verdict: Verdict
    /// The realtime message text (`{"t":"d","d":{...}}`, or anything at all).
    var text: String = ""
    /// A REST request.
    var method: TestHTTPMethod = .GET
    var target: String = ""
    var body: String = ""
}

/// Generates realtime messages and REST requests from seeded randomness, in families whose verdict
/// is known by construction (valid, invalid in one specific way) plus random mutations of valid
/// ones. Writes land under `fuzz/v`; `big`, which no mutation of a valid path can reach, holds
/// 1.7e308 for increments that overflow.
struct RequestGenerator {
    var random: SeededGenerator
    private var number = 0

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// What the namespace holds before the inputs are sent.
    static let initialData: JSONValue = ["big": 1.7e308, "fuzz": ["v": ["seed": true]]]

    // MARK: Realtime

    mutating func realtimeMessage() -> GeneratedInput {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<30: return valid()
        case 30..<65: return invalid()
        default: return mutated()
        }
    }

    private mutating func request(_ action: String, _ body: JSONValue) -> String {
        number += 1
        let request: JSONValue = ["r": .number(Double(number)), "a": .string(action), "b": body]
        return (["t": "d", "d": request] as JSONValue).serialized()
    }

    private mutating func valid() -> GeneratedInput {
        let path = validPath()
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1:
            return GeneratedInput(
                family: "valid put", verdict: .accepted, text: request("p", ["p": .string(path), "d": value(depth: 0)]))
        case 2:
            return GeneratedInput(
                family: "valid merge", verdict: .accepted, text: request("m", ["p": .string(path), "d": members()]))
        case 3:
            let priority: JSONValue = Bool.random(using: &random) ? .number(Double(smallInt())) : .string(key())
            return GeneratedInput(
                family: "valid priority", verdict: .accepted,
                text: request("p", ["p": .string(path + "/.priority"), "d": priority]))
        case 4:
            return GeneratedInput(
                family: "valid onDisconnect put", verdict: .accepted,
                text: request("o", ["p": .string(path), "d": value(depth: 0)]))
        default:
            return GeneratedInput(
                family: "valid onDisconnect merge", verdict: .accepted,
                text: request("om", ["p": .string(path), "d": members()]))
        }
    }

    private mutating func invalid() -> GeneratedInput {
        let path = validPath()
        let (family, action, body): (String, String, JSONValue)
        switch Int.random(in: 0..<16, using: &random) {
        case 0: (family, action, body) = ("bad key in path", "p", ["p": .string(path + "/" + badKey()), "d": 1])
        case 1: (family, action, body) = ("bad key in data", "p", ["p": .string(path), "d": [badKey(): 1]])
        case 2:
            (family, action, body) = (
                ".sv beside members", pick(["p", "o"]), ["p": .string(path), "d": [".sv": "timestamp", key(): 1]]
            )
        case 3:
            (family, action, body) = (
                "unknown server value", "p",
                ["p": .string(path), "d": [".sv": pick(["nonsense", ["increment": "x"]] as [JSONValue])]]
            )
        case 4:
            (family, action, body) = (".value holding an object", "p", ["p": .string(path), "d": [".value": ["a": 1]]])
        case 5:
            (family, action, body) = (".value beside data", "p", ["p": .string(path), "d": [".value": 1, key(): 2]])
        case 6:
            (family, action, body) = (
                "increment that overflows", "p", ["p": "big", "d": [".sv": ["increment": 1.7e308]]]
            )
        case 7:
            (family, action, body) = (
                "increment that overflows in a merge", "m", ["p": "", "d": ["big": [".sv": ["increment": 1.7e308]]]]
            )
        case 8:
            let first = key()
            let members: JSONValue = .object([first: 1, first + "/x": 2])
            (family, action, body) = ("overlapping members", pick(["m", "om"]), ["p": .string(path), "d": members])
        case 9:
            (family, action, body) = ("merge below .priority", "m", ["p": .string(path + "/.priority"), "d": ["x": 1]])
        case 10:
            (family, action, body) = (
                "priority that is not one", "p",
                ["p": .string(path + "/.priority"), "d": pick([["x": 1], true, [1]] as [JSONValue])]
            )
        case 11:
            (family, action, body) = (
                ".info in a member", pick(["m", "om"]), ["p": .string(path), "d": [".info/x": 1]]
            )
        case 12: (family, action, body) = ("data too deep", "p", ["p": .string(path), "d": nested(33)])
        case 13: (family, action, body) = ("merge of a non-object", pick(["m", "om"]), ["p": .string(path), "d": 5])
        case 14: (family, action, body) = ("numeric path", "p", ["p": 5, "d": 1])
        default:
            // JSON numbers beyond a double: the message does not parse.
            number += 1
            let text = #"{"t":"d","d":{"r":\#(number),"a":"p","b":{"p":"\#(path)","d":1e400}}}"#
            return GeneratedInput(family: "number out of range", verdict: .refused, text: text)
        }
        return GeneratedInput(family: family, verdict: .refused, text: request(action, body))
    }

    private mutating func mutated() -> GeneratedInput {
        var scalars = Array(valid().text.unicodeScalars)
        let edits = Int.random(in: 1...3, using: &random)
        for _ in 0..<edits where !scalars.isEmpty {
            let index = Int.random(in: 0..<scalars.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: scalars.removeSubrange(index...)
            case 1: scalars[index] = randomScalar()
            case 2: scalars.insert(randomScalar(), at: index)
            default: scalars.remove(at: index)
            }
        }
        var text = String(String.UnicodeScalarView(scalars))
        if Int.random(in: 0..<20, using: &random) == 0 { text = garbage() }
        return GeneratedInput(family: "mutated", verdict: .either, text: text)
    }

    // MARK: REST

    mutating func restRequest() -> GeneratedInput {
        let path = validPath()
        switch Int.random(in: 0..<20, using: &random) {
        case 0..<4:
            return GeneratedInput(
                family: "REST valid put", verdict: .accepted, method: .PUT, target: target(path),
                body: value(depth: 0).serialized())
        case 4..<6:
            return GeneratedInput(
                family: "REST valid patch", verdict: .accepted, method: .PATCH, target: target(path),
                body: members().serialized())
        case 6:
            return GeneratedInput(
                family: "REST valid post", verdict: .accepted, method: .POST, target: target(path),
                body: value(depth: 0).serialized())
        case 7:
            return GeneratedInput(
                family: "REST valid delete", verdict: .accepted, method: .DELETE, target: target(path))
        case 8:
            let query = pick([
                #"&orderBy="$key"&limitToFirst=2"#, #"&orderBy="$value"&startAt=1"#, "&shallow=true",
                #"&orderBy="a/b"&equalTo="x""#, "&format=export",
            ])
            return GeneratedInput(
                family: "REST valid get", verdict: .accepted, method: .GET, target: target(path) + query)
        case 9:
            return GeneratedInput(
                family: "REST bad key in path", verdict: .refused, method: .PUT,
                target: target(path).replacingOccurrences(
                    of: ".json", with: pick(["%2E", "$", "%23", "%5B"]) + "x.json"),
                body: "1")
        case 10:
            return GeneratedInput(
                family: "REST body not JSON", verdict: .refused, method: pick([TestHTTPMethod.PUT, .PATCH, .POST]),
                target: target(path), body: pick(["{", "nul", "'a'", "1e400", #"{"a":}"#, ""]))
        case 11:
            return GeneratedInput(
                family: "REST increment that overflows", verdict: .refused, method: .PUT,
                target: "/big.json?ns=fuzz", body: #"{".sv":{"increment":1.7e308}}"#)
        case 12:
            return GeneratedInput(
                family: "REST invalid data", verdict: .refused, method: .PUT, target: target(path),
                body: pick([
                    #"{".sv":"timestamp","x":1}"#, #"{".value":{"a":1}}"#, #"{"a.b":1}"#, #"{".value":1,"x":2}"#,
                ]))
        case 13:
            return GeneratedInput(
                family: "REST invalid update", verdict: .refused, method: .PATCH, target: target(path),
                body: pick([#"{"a":1,"a/b":2}"#, #"{".info/x":1}"#, #"{"a#":1}"#, "5"]))
        case 14:
            return GeneratedInput(
                family: "REST update below .priority", verdict: .refused, method: .PATCH,
                target: target(path + "/.priority"), body: #"{"x":1}"#)
        case 15:
            return GeneratedInput(
                family: "REST query without orderBy", verdict: .refused, method: .GET,
                target: target(path) + "&limitToFirst=1")
        default:
            var input = restRequestToMutate()
            var characters = Array(input.target)
            let index = Int.random(in: 0..<characters.count, using: &random)
            characters[index] = Character(randomScalar())
            input.target = String(characters)
            if Bool.random(using: &random), !input.body.isEmpty {
                var body = Array(input.body.unicodeScalars)
                body[Int.random(in: 0..<body.count, using: &random)] = randomScalar()
                input.body = String(String.UnicodeScalarView(body))
            }
            input.family = "REST mutated"
            input.verdict = .either
            return input
        }
    }

    private mutating func restRequestToMutate() -> GeneratedInput {
        GeneratedInput(
            family: "", verdict: .either, method: pick([TestHTTPMethod.PUT, .PATCH, .GET]), target: target(validPath()),
            body: pick([value(depth: 0), members()]).serialized())
    }

    /// `/PATH.json?ns=fuzz`, with some characters percent-encoded as browsers and SDKs do.
    private mutating func target(_ path: String) -> String {
        var encoded = ""
        for character in path {
            if character != "/", Int.random(in: 0..<8, using: &random) == 0,
                let escaped = String(character).addingPercentEncodingForPath()
            {
                encoded += escaped
            } else {
                encoded.append(character)
            }
        }
        return "/" + encoded + ".json?ns=fuzz"
    }

    // MARK: Parts

    private mutating func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &random)] }

    private mutating func smallInt() -> Int { Int.random(in: -1000...1000, using: &random) }

    private mutating func key() -> String {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return String(Int.random(in: 0..<20, using: &random))
        case 1: return pick(["é", "日本", "a b", "-x", "_", "🌲", "\u{301}k", "-0", "007", "2147483648"])
        default:
            let letters = Array("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789")
            return String((0..<Int.random(in: 1...6, using: &random)).map { _ in pick(letters) })
        }
    }

    private mutating func badKey() -> String {
        key() + pick([".", "$", "#", "[", "]", "\u{1}", "\u{7F}", "\u{1F}"]) + key()
    }

    private mutating func validPath() -> String {
        "fuzz/v/" + (0..<Int.random(in: 1...3, using: &random)).map { _ in key() }.joined(separator: "/")
    }

    private mutating func leaf() -> JSONValue {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return .bool(Bool.random(using: &random))
        case 1: return .number(Double(smallInt()))
        case 2: return .number(Double.random(in: -1e6...1e6, using: &random))
        case 3: return .string(pick(["", "text", "quote \" and \\ slash", "line\nbreak", "日本語", "🌲🌳", "\u{0}"]))
        case 4: return [".sv": pick(["timestamp", ["increment": .number(Double(smallInt()))]] as [JSONValue])]
        default: return .string(key())
        }
    }

    private mutating func value(depth: Int) -> JSONValue {
        guard depth < 4, Int.random(in: 0..<3, using: &random) == 0 else {
            switch Int.random(in: 0..<8, using: &random) {
            case 0: return [".value": leaf(), ".priority": .number(Double(smallInt()))]
            case 1: return .null
            default: return leaf()
            }
        }
        if Int.random(in: 0..<5, using: &random) == 0 {
            return .array((0..<Int.random(in: 1...3, using: &random)).map { _ in value(depth: depth + 1) })
        }
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 1...4, using: &random) { members[key()] = value(depth: depth + 1) }
        if Int.random(in: 0..<4, using: &random) == 0 { members[".priority"] = .string(key()) }
        return .object(members)
    }

    /// Members of a valid multi-path update: distinct first keys, so no two overlap.
    private mutating func members() -> JSONValue {
        var members: [String: JSONValue] = [:]
        var firsts: Set<String> = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let first = key()
            guard firsts.insert(first).inserted else { continue }
            let path = Bool.random(using: &random) ? first : first + "/" + key()
            members[path] = value(depth: 1)
        }
        return .object(members)
    }

    private func nested(_ depth: Int) -> JSONValue {
        (0..<depth).reduce(JSONValue.string("leaf")) { inner, _ in ["n": inner] }
    }

    private mutating func randomScalar() -> Unicode.Scalar {
        let choices: [UInt32] = [
            0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x3A, 0x2C, 0x2E, 0x24, 0x23, 0x2F, 0x0, 0x1F, 0x7F,
        ]
        if Bool.random(using: &random) { return Unicode.Scalar(pick(choices)) ?? "x" }
        return Unicode.Scalar(UInt32.random(in: 0x20...0x2FFF, using: &random)) ?? "y"
    }

    private mutating func garbage() -> String {
        String(String.UnicodeScalarView((0..<Int.random(in: 0...40, using: &random)).map { _ in randomScalar() }))
    }
}

extension String {
    /// The string with every character percent-encoded (as UTF-8 bytes).
    fileprivate func addingPercentEncodingForPath() -> String? {
        utf8.map { byte in "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2) }.joined()
    }

    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
