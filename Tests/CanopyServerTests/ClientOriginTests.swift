import Testing

@testable import CanopyServer

/// Whom the server takes a request to come from, with and without trusted proxies.
struct ClientOriginTests {
    let proxies: [IPNetwork]

    init() throws {
        proxies = try IPNetwork.list(parsing: "10.0.0.0/8, fd00::/8")
    }

    func origin(peer: String, forwardedFor: [String] = [], proto: [String] = []) -> ClientOrigin {
        ClientOrigin(
            peer: peer, forwarded: ForwardedHeaders(forwardedForValues: forwardedFor, forwardedProtoValues: proto),
            trustedProxies: proxies)
    }

    @Test func headersFromAnUntrustedPeerAreIgnored() {
        let forged = origin(peer: "198.51.100.4", forwardedFor: ["203.0.113.9"], proto: ["https"])
        #expect(forged == ClientOrigin(peer: "198.51.100.4", forwarded: .none, trustedProxies: []))
        #expect(forged.address == "198.51.100.4" && forged.scheme == "http")
    }

    @Test func theRightmostUntrustedAddressIsTheClient() {
        // A client forged the first entry; the proxy nearest the client (10.0.0.7) appended its peer.
        let proxied = origin(
            peer: "10.0.0.5", forwardedFor: ["203.0.113.9, 198.51.100.4", "10.0.0.7"], proto: ["https"])
        #expect(proxied.address == "198.51.100.4")
        #expect(proxied.scheme == "https")
        let v6 = origin(peer: "fd00::2", forwardedFor: ["2001:db8::1"], proto: ["http"])
        #expect(v6.address == "2001:db8::1" && v6.scheme == "http")
        #expect(origin(peer: "::ffff:10.0.0.5", forwardedFor: ["192.0.2.1"]).address == "192.0.2.1")
        #expect(origin(peer: "10.0.0.5", forwardedFor: ["10.0.0.6"]).address == "10.0.0.6", "every hop trusted")
        #expect(origin(peer: "10.0.0.5", forwardedFor: ["unknown"]).address == "10.0.0.5")
    }

    @Test func networksParseAndMatch() throws {
        #expect(try IPNetwork(parsing: "192.168.1.77/24").description == "192.168.1.0/24")
        #expect(try IPNetwork(parsing: "::1").contains(address: "[::1]"))
        #expect(try IPNetwork(parsing: "0.0.0.0/0").contains(address: "8.8.8.8"))
        #expect(try !IPNetwork(parsing: "10.0.0.0/8").contains(address: "11.0.0.1"))
        #expect(try IPNetwork.list(parsing: " 10.0.0.0/8, ::1 ").count == 2)
        #expect(throws: IPNetworkError.self) { try IPNetwork(parsing: "10.0.0.0/33") }
        #expect(throws: IPNetworkError.self) { try IPNetwork(parsing: "example.com") }
    }
}
