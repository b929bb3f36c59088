import RealtimeClientSocket
import Testing

struct RealtimeEndpointTests {
    @Test func readsHostPortAndNamespaceParameter() throws {
        let endpoint = try RealtimeEndpoint(url: "http://127.0.0.1:9000?ns=demo")
        #expect(endpoint == RealtimeEndpoint(host: "127.0.0.1", port: 9000, secure: false, namespace: "demo"))
        #expect(endpoint.webSocketURL(lastSession: nil) == "ws://127.0.0.1:9000/.ws?v=5&ns=demo")
        #expect(endpoint.webSocketURL(lastSession: "s1") == "ws://127.0.0.1:9000/.ws?v=5&ns=demo&ls=s1")
    }

    @Test func takesTheNamespaceFromTheFirstLabelOfADomainName() throws {
        let endpoint = try RealtimeEndpoint(url: "https://demo.example.com")
        #expect(endpoint == RealtimeEndpoint(host: "demo.example.com", port: 443, secure: true, namespace: "demo"))
        #expect(endpoint.webSocketURL(lastSession: nil) == "wss://demo.example.com:443/.ws?v=5&ns=demo")
        #expect(try RealtimeEndpoint(url: "https://Demo-1.example.com/").namespace == "demo-1")
        #expect(try RealtimeEndpoint(url: "https://demo.example.com?ns=other").namespace == "other")
    }

    @Test func usesDefaultForHostsThatAreNotDomainNames() throws {
        #expect(try RealtimeEndpoint(url: "http://localhost:9000").namespace == "default")
        #expect(try RealtimeEndpoint(url: "http://127.0.0.1:9000").namespace == "default")
        #expect(try RealtimeEndpoint(url: "http://[::1]:9000").namespace == "default")
        #expect(try RealtimeEndpoint(url: "http://canopy").namespace == "default")
    }

    @Test func defaultsThePortBySchemeAndKeepsAnExplicitOne() throws {
        #expect(try RealtimeEndpoint(url: "http://db.example.org").port == 80)
        #expect(try RealtimeEndpoint(url: "https://db.example.org").port == 443)
        #expect(try RealtimeEndpoint(url: "ws://db.example.org").port == 80)
        #expect(try RealtimeEndpoint(url: "wss://db.example.org").port == 443)
        #expect(try RealtimeEndpoint(url: "https://db.example.org:8443").port == 8443)
        let webSocket = try RealtimeEndpoint(url: "ws://127.0.0.1:9000/.ws?v=5&ns=demo")
        #expect(webSocket == RealtimeEndpoint(host: "127.0.0.1", port: 9000, secure: false, namespace: "demo"))
        #expect(try RealtimeEndpoint(url: "WSS://db.example.org").secure)
    }

    @Test func writesIPv6HostsInBracketsAndEncodesQueryValues() throws {
        let endpoint = try RealtimeEndpoint(url: "http://[::1]:9000?ns=demo")
        #expect(endpoint.host == "::1")
        #expect(endpoint.webSocketURL(lastSession: nil) == "ws://[::1]:9000/.ws?v=5&ns=demo")
        let odd = RealtimeEndpoint(host: "h", port: 1, secure: false, namespace: "a b&c")
        #expect(odd.webSocketURL(lastSession: "x=y") == "ws://h:1/.ws?v=5&ns=a%20b%26c&ls=x%3Dy")
    }

    @Test(arguments: [
        ("", "empty"),
        ("//example.com:9000", "no scheme"),
        ("http://exa mple.com", "not a URL"),
        ("ftp://example.com", "unsupported scheme \"ftp\""),
        ("http://", "no host"),
        ("http://example.com:0", "port 0"),
        ("http://example.com/some/path", "path \"/some/path\""),
        ("http://127.0.0.1:9000?ns=", "empty namespace"),
    ])
    func refusesBadURLsWithAReason(url: String, reasonPart: String) {
        do {
            let endpoint = try RealtimeEndpoint(url: url)
            Issue.record("\(url) was accepted as \(endpoint)")
        } catch {
            guard case .invalidURL(let refused, let reason) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(refused == url)
            #expect(reason.contains(reasonPart), "\(url): \(reason)")
        }
    }

    @Test func aRedirectKeepsTheSchemeAndNamespaceAndRefusesWhatIsNotAHost() throws {
        let endpoint = try RealtimeEndpoint(url: "https://a.example.com:8443?ns=demo")
        #expect(
            endpoint.redirected(to: "b.example.com:9443")
                == RealtimeEndpoint(host: "b.example.com", port: 9443, secure: true, namespace: "demo"))
        #expect(
            endpoint.redirected(to: "10.0.0.2")
                == RealtimeEndpoint(host: "10.0.0.2", port: 443, secure: true, namespace: "demo"))
        #expect(
            endpoint.redirected(to: "[::1]:9000")
                == RealtimeEndpoint(host: "::1", port: 9000, secure: true, namespace: "demo"))
        for bad in ["", "b/c", "b?ns=x", "user@b", "b:0", "b:99999", "b:port"] {
            #expect(endpoint.redirected(to: bad) == nil, "\(bad)")
        }
    }
}
