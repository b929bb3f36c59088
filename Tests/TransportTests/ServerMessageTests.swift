import Testing
import Transport
import Tree

struct ServerMessageTests {
    @Test func encodesTheEnvelopesOfThePROTOCOL() {
        #expect(ServerMessage.ok(3).text == #"{"d":{"b":{"d":"","s":"ok"},"r":3},"t":"d"}"#)
        for number in [0, 7, 123_456_789] {
            #expect(ServerMessage.ok(number).text == ServerMessage.ok(number).json.serialized())
        }
        #expect(
            ServerMessage.overwrite(path: "a/b", data: 1, tag: nil).text
                == #"{"d":{"a":"d","b":{"d":1,"p":"a/b"}},"t":"d"}"#)
        #expect(
            ServerMessage.merge(path: "a", data: ["x": nil], tag: 2).text
                == #"{"d":{"a":"m","b":{"d":{"x":null},"p":"a","t":2}},"t":"d"}"#)
        #expect(
            ServerMessage.hello(timestamp: 1_700_000_000_000, version: "5", host: "127.0.0.1:9000", sessionID: "s1")
                .text
                == #"{"d":{"d":{"h":"127.0.0.1:9000","s":"s1","ts":1700000000000,"v":"5"},"t":"h"},"t":"c"}"#)
        #expect(ServerMessage.pong.text == #"{"d":{"d":{},"t":"o"},"t":"c"}"#)
    }

    @Test func statusesKeepTheirWireSpelling() throws {
        let spelled = [
            "ok", "permission_denied", "invalid_path", "invalid_data", "invalid_query", "invalid_request",
            "invalid_token", "expired_token", "datastale", "storage_error", "unavailable", "too_big",
            "too_many_listens", "unknown_action",
        ]
        for text in spelled {
            #expect(ResponseStatus(text).text == text)
            if case .other = ResponseStatus(text) { Issue.record("\(text) is a known status") }
        }
        #expect(ResponseStatus("overloaded") == .other("overloaded"))
        #expect(ResponseStatus("overloaded").text == "overloaded")
        let answer = try ServerMessage(
            json: JSONValue(parsing: #"{"t":"d","d":{"r":3,"b":{"s":"datastale","d":"x"}}}"#))
        #expect(answer == .response(number: 3, status: .dataStale, data: "x"))
    }

    @Test func decodesWhatItEncodes() throws {
        let messages: [ServerMessage] = [
            .response(number: 1, status: .dataStale, data: "Transaction hash does not match"),
            .ok(2, data: ["w": ["no_index"]]),
            .overwrite(path: "a", data: ["b": 1], tag: 4),
            .merge(path: "", data: ["a/b": 2], tag: nil),
            .listenRevoked(path: "secret", query: nil),
            .authRevoked(status: .expiredToken, reason: "credential is no longer valid"),
            .hello(timestamp: 42, version: "5", host: "h:1", sessionID: "abc"),
            .hello(timestamp: 42, version: "5", host: "h:1", sessionID: "abc", extensions: ["write-ids"]),
            .reset(host: "other:9000"),
            .shutdown(reason: "bye"),
            .error("bad"),
            .ping,
            .pong,
        ]
        for message in messages {
            #expect(try ServerMessage(json: JSONValue(parsing: message.text)) == message, "\(message.text)")
        }
    }
}
