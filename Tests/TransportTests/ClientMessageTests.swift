import Testing
import Transport
import Tree

struct ClientMessageTests {
    /// Decodes `text` with the server's reader, after checking that it agrees with decoding the
    /// parsed JSON value (same message, or the same protocol error; JSON errors are worded apart).
    private func decode(_ text: String) throws -> ClientMessage {
        let streamed = Result { () throws(ProtocolError) in try ClientMessage(parsing: text) }
        let built = Result { () throws(ProtocolError) in
            let json: JSONValue
            do throws(TreeError) {
                json = try JSONValue(parsing: text)
            } catch {
                throw .malformedJSON(error.description)
            }
            return try ClientMessage(json: json)
        }
        switch (streamed, built) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(text)")
        case (.failure(let a), .failure(let b)):
            #expect(a == b, "\(text)")
        default:
            Issue.record("the two decoders disagree on \(text): \(streamed) vs \(built)")
        }
        return try streamed.get()
    }

    @Test func memberOrderRepeatsAndExtraMembersDecodeAlike() throws {
        let put = ClientMessage.request(ClientRequest(number: 3, action: .put(path: "a/b", data: ["x": 1], hash: nil)))
        #expect(try decode(#"{"d":{"b":{"d":{"x":1},"p":"a/b"},"a":"p","r":3},"t":"d"}"#) == put)
        #expect(
            try decode(#" { "t" : "d" , "d" : { "r" : 3 , "a" : "p" , "b" : { "p" : "a/b" , "d" : {"x":1} } } } "#)
                == put)
        #expect(
            try decode(#"{"t":"d","x":[1,{"y":2}],"d":{"r":3,"z":null,"a":"p","b":{"p":"a/b","d":{"x":1},"w":1}}}"#)
                == put)
        // A repeated name keeps its last value, for the envelope, the body and the payload.
        #expect(try decode(#"{"t":"c","t":"d","d":{"r":3,"a":"p","b":{"p":"a/b","d":{"x":1}}}}"#) == put)
        #expect(try decode(#"{"t":"d","d":{"r":1},"d":{"r":3,"a":"p","b":{"p":"a/b","d":{"x":1}}}}"#) == put)
        #expect(try decode(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"z"},"b":{"p":"a/b","d":{"x":1}}}}"#) == put)
        #expect(try decode(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"a\/b","d":{"x":1}}}}"#) == put)
        #expect(throws: ProtocolError.invalidRequest(number: 3, reason: "missing path \"p\"")) {
            try decode(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"a/b","d":1},"b":7}}"#)
        }
        #expect(throws: ProtocolError.self) { try decode(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"a","d":1}},"d":5}"#) }
    }

    @Test func aWriteIDTravelsInTheBodyAndAMalformedOneIsIgnored() throws {
        let id = WriteID(client: "c-1", sequence: 7)
        let put = ClientMessage.request(
            ClientRequest(number: 3, action: .put(path: "a", data: 1, hash: nil), writeID: id))
        #expect(put.json.serialized() == #"{"d":{"a":"p","b":{"d":1,"p":"a","w":{"c":"c-1","n":7}},"r":3},"t":"d"}"#)
        #expect(try decode(put.json.serialized()) == put)
        let merge = ClientMessage.request(
            ClientRequest(number: 4, action: .merge(path: "a", data: ["b": 1]), writeID: id))
        #expect(try decode(merge.json.serialized()) == merge)
        let plain = ClientMessage.request(ClientRequest(number: 3, action: .put(path: "a", data: 1, hash: nil)))
        for malformed in [#"{"c":"","n":1}"#, #"{"c":"x","n":1.5}"#, #"{"c":"x","n":-1}"#, #"{"c":1,"n":1}"#, "[]"] {
            #expect(try decode(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"a","d":1,"w":\#(malformed)}}}"#) == plain)
        }
    }

    @Test func textThatIsNotJSONIsMalformedJSON() {
        for text in [
            #"{"t":"d","d":{"r":1}"#, #"{"t":"d","d":{}} x"#, #"{"t":"d",}"#, "", #"{"t" "d"}"#,
            #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"a","d":[1,]}}}"#,
        ] {
            #expect(throws: ProtocolError.self, "\(text)") { try decode(text) }
            if case .failure(let error) = Result(catching: { () throws(ProtocolError) in
                try ClientMessage(parsing: text)
            }) {
                guard case .malformedJSON = error else {
                    Issue.record("\(text) gave \(error)")
                    continue
                }
            }
        }
    }

    @Test func decodesEveryActionTheOfficialClientsSend() throws {
        let cases: [(String, ClientAction)] = [
            (#"{"r":1,"a":"q","b":{"p":"/a","h":"xyz"}}"#, .listen(path: "/a", query: nil, tag: nil, hash: "xyz")),
            (
                #"{"r":2,"a":"q","b":{"p":"a","q":{"l":2,"vf":"r","i":"h"},"t":7,"h":""}}"#,
                .listen(path: "a", query: ["l": 2, "vf": "r", "i": "h"], tag: 7, hash: "")
            ),
            (#"{"r":3,"a":"n","b":{"p":"a","t":7}}"#, .unlisten(path: "a", query: nil, tag: 7)),
            (#"{"r":4,"a":"p","b":{"p":"a","d":{"b":1}}}"#, .put(path: "a", data: ["b": 1], hash: nil)),
            (#"{"r":5,"a":"p","b":{"p":"a","d":2,"h":"abc="}}"#, .put(path: "a", data: 2, hash: "abc=")),
            (#"{"r":6,"a":"m","b":{"p":"a","d":{"b/c":null}}}"#, .merge(path: "a", data: ["b/c": nil])),
            (#"{"r":7,"a":"o","b":{"p":"a","d":false}}"#, .onDisconnectPut(path: "a", data: false)),
            (#"{"r":8,"a":"om","b":{"p":"a","d":{"x":1}}}"#, .onDisconnectMerge(path: "a", data: ["x": 1])),
            (#"{"r":9,"a":"oc","b":{"p":"a","d":null}}"#, .onDisconnectCancel(path: "a")),
            (#"{"r":10,"a":"g","b":{"p":"a","q":{}}}"#, .get(path: "a", query: [:])),
            (#"{"r":11,"a":"gauth","b":{"cred":"token"}}"#, .adminAuth(credential: "token", authVariable: nil)),
            (
                #"{"r":11,"a":"gauth","b":{"cred":"token","authvar":{"uid":"ada"}}}"#,
                .adminAuth(credential: "token", authVariable: ["uid": "ada"])
            ),
            (
                #"{"r":11,"a":"gauth","b":{"cred":"token","noauth":true}}"#,
                .adminAuth(credential: "token", authVariable: .null)
            ),
            (#"{"r":12,"a":"unauth","b":{}}"#, .unauth),
            (#"{"r":13,"a":"s","b":{"c":{"sdk.js.9":1}}}"#, .stats(["sdk.js.9": 1])),
            (#"{"r":14,"a":"zz","b":{}}"#, .unknown(action: "zz")),
        ]
        for (body, action) in cases {
            let message = try decode(#"{"t":"d","d":"# + body + "}")
            guard case .request(let request) = message else {
                Issue.record("\(body) did not decode as a request")
                continue
            }
            #expect(request.action == action, "\(body)")
        }
    }

    @Test func decodesControlMessages() throws {
        #expect(try decode(#"{"t":"c","d":{"t":"p","d":{}}}"#) == .ping)
        #expect(try decode(#"{"t":"c","d":{"t":"o","d":{}}}"#) == .pong)
        #expect(try decode(#"{"t":"c","d":{"t":"x","d":{}}}"#) == .control("x"))
    }

    @Test func reportsWhatIsWrongWithABadRequest() throws {
        #expect(throws: ProtocolError.invalidRequest(number: 4, reason: "missing path \"p\"")) {
            try decode(#"{"t":"d","d":{"r":4,"a":"p","b":{"d":1}}}"#)
        }
        #expect(throws: ProtocolError.invalidRequest(number: 5, reason: "missing data \"d\"")) {
            try decode(#"{"t":"d","d":{"r":5,"a":"p","b":{"p":"a"}}}"#)
        }
        #expect(throws: ProtocolError.invalidRequest(number: 6, reason: "tag \"t\" must be an integer")) {
            try decode(#"{"t":"d","d":{"r":6,"a":"q","b":{"p":"a","t":"x"}}}"#)
        }
        #expect(throws: ProtocolError.self) { try decode(#"{"t":"d","d":{"a":"p"}}"#) }
        #expect(throws: ProtocolError.self) { try decode(#"{"t":"x","d":{}}"#) }
        #expect(throws: ProtocolError.self) { try decode(#"[1,2]"#) }
    }

    @Test func encodesRequestsThatDecodeToTheSameAction() throws {
        let actions: [ClientAction] = [
            .listen(path: "a/b", query: ["sp": 1, "sin": true], tag: 3, hash: "h"),
            .unlisten(path: "a", query: nil, tag: nil),
            .put(path: "a", data: ["x": [1, 2]], hash: "hash"),
            .merge(path: "", data: ["a/b": 1]),
            .onDisconnectPut(path: "p", data: "bye"),
            .onDisconnectMerge(path: "p", data: ["q": 1]),
            .onDisconnectCancel(path: "p"),
            .get(path: "g", query: ["l": 1, "vf": "l"]),
            .auth(credential: "owner"),
            .unauth,
            .stats(["c": 1]),
        ]
        for (number, action) in actions.enumerated() {
            let text = ClientMessage.request(ClientRequest(number: number, action: action)).json.serialized()
            #expect(try decode(text) == .request(ClientRequest(number: number, action: action)), "\(text)")
        }
    }
}
