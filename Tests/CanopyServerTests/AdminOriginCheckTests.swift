import Testing

@testable import CanopyServer

/// Which browser pages may use the admin credential (``AdminOriginCheck``).
struct AdminOriginCheckTests {
    let check = AdminOriginCheck(advertiseHost: "db.example.com:9000")

    @Test func aRequestWithoutAnOriginIsNoPageAndIsNotChecked() {
        #expect(check.refusal(origin: nil, host: "evil.example:9000", credential: "owner") == nil)
        #expect(check.refusal(origin: nil, host: nil, credential: "owner") == nil)
    }

    @Test func aPageOfTheServersOwnOriginMayUseTheAdminCredential() {
        for (origin, host) in [
            ("http://127.0.0.1:9000", "127.0.0.1:9000"), ("http://LOCALHOST:9000", "localhost:9000"),
            ("http://[::1]:9000", "[::1]:9000"), ("http://127.0.0.1", "127.0.0.1:80"),
            ("https://10.0.0.5", "10.0.0.5"), ("http://app.localhost:9000", "app.localhost:9000"),
            ("http://db.example.com:9000", "db.example.com:9000"),
        ] {
            #expect(check.refusal(origin: origin, host: host, credential: "owner") == nil, "\(origin) \(host)")
        }
    }

    @Test func aPageOfAnotherOriginIsRefusedTheAdminCredential() {
        for (origin, host) in [
            ("https://evil.example", "127.0.0.1:9000"), ("http://127.0.0.1:9001", "127.0.0.1:9000"),
            ("http://localhost:9000", "127.0.0.1:9000"), ("null", "127.0.0.1:9000"),
            ("http://127.0.0.1:9000", "127.0.0.1:9000:1"), ("http://127.0.0.1:9000/path", "127.0.0.1:9000"),
        ] {
            for credential in ["owner", "the-admin-secret"] {
                let refusal = check.refusal(origin: origin, host: host, credential: credential)
                #expect(
                    refusal?.contains("another origin") == true, "\(origin) \(host): \(String(describing: refusal))")
            }
        }
        #expect(check.refusal(origin: "http://127.0.0.1:9000", host: nil, credential: "owner") != nil)
    }

    /// A DNS-rebinding page is of the server's origin under a name of its own: `owner` is refused
    /// there; the admin secret, which such a page cannot know, is not.
    @Test func ownerIsRefusedAtANameAnotherSiteCouldPointHere() {
        let refusal = check.refusal(origin: "http://evil.example:9000", host: "evil.example:9000", credential: "owner")
        #expect(refusal?.contains("'owner' is refused") == true, "\(String(describing: refusal))")
        #expect(
            check.refusal(origin: "https://canopy.example.org", host: "canopy.example.org", credential: "secret")
                == nil)
        let unadvertised = AdminOriginCheck(advertiseHost: nil)
        #expect(
            unadvertised.refusal(
                origin: "http://db.example.com:9000", host: "db.example.com:9000", credential: "owner") != nil)
    }
}
