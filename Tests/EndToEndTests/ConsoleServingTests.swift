import CanopyTesting
import Foundation
import HTTPTypes
import Hummingbird
import Testing
import Tree

@testable import CanopyServer

/// The console is served to browsers at data locations, beside REST and never in its way: its page
/// for a `GET` that asks for HTML at a path with no `.`, its files under `/.console/`, with a
/// Content-Security-Policy that allows no inline script or style.
struct ConsoleServingTests {
    static let browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

    @Test func aBrowserOpeningADataLocationGetsTheConsole() async throws {
        try await withTestServer { server in
            for target in ["/", "/users/ada", "/users/ada?ns=other", "/a%20b/%C3%A9"] {
                let page = try await server.http(.GET, target, headers: [("Accept", Self.browserAccept)])
                #expect(page.status == 200, "\(target): \(page.body)")
                #expect(page.header("Content-Type") == "text/html; charset=utf-8")
                #expect(page.body.contains(#"<script type="module" src="/.console/main.js"></script>"#))
                let policy = try #require(page.header("Content-Security-Policy"))
                for directive in [
                    "default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'",
                    "base-uri 'none'", "frame-ancestors 'none'",
                ] {
                    #expect(policy.contains(directive), "\(directive) missing from \(policy)")
                }
                #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
                #expect(page.header("X-Content-Type-Options") == "nosniff")
                #expect(page.header("Cache-Control") == "no-cache")
                #expect(page.header("ETag") != nil)
            }
        }
    }

    @Test func clientsThatDoNotAskForHTMLGetRESTAsBefore() async throws {
        try await withTestServer { server in
            _ = try await server.http(.PUT, "/users/ada.json", body: #"{"name": "Ada"}"#)
            let plain = try await server.http(.GET, "/users/ada")
            #expect(plain.status == 404)
            #expect(plain.body == #"{"error":"Not found: REST paths end in .json (for example /users/ada.json)"}"#)
            let json = try await server.http(.GET, "/users/ada", headers: [("Accept", "application/json")])
            #expect(json.status == 404)

            // A browser asking for a .json location gets the data, and /health stays what it is.
            let data = try await server.http(.GET, "/users/ada.json", headers: [("Accept", Self.browserAccept)])
            #expect(data.json == ["name": "Ada"])
            let health = try await server.http(.GET, "/health", headers: [("Accept", Self.browserAccept)])
            #expect(health.body == "ok\n")
            // Writes are REST's whatever they accept.
            let put = try await server.http(
                .PUT, "/users/ada", headers: [("Accept", Self.browserAccept)], body: #""x""#)
            #expect(put.status == 404)
        }
    }

    @Test func theConsoleFilesAreServedWithTheirTypesAndRevalidated() async throws {
        try await withTestServer { server in
            let script = try await server.http(.GET, "/.console/main.js")
            #expect(script.status == 200)
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
            #expect(script.header("X-Content-Type-Options") == "nosniff")
            let style = try await server.http(.GET, "/.console/console.css")
            #expect(style.header("Content-Type") == "text/css; charset=utf-8")
            let etag = try #require(script.header("ETag"))
            let again = try await server.http(.GET, "/.console/main.js", headers: [("If-None-Match", etag)])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            let missing = try await server.http(.GET, "/.console/nothing.js")
            #expect(missing.status == 404)
            #expect(missing.json?["error"]?.stringValue?.contains("nothing.js") == true)
            let outside = try await server.http(.GET, "/.console/../users.json")
            #expect(outside.status != 200 || outside.header("Content-Type") != "text/javascript; charset=utf-8")
        }
    }

    @Test func aMissingBundleIsAnsweredWithWhereItWasLookedFor() throws {
        let nowhere = URL(fileURLWithPath: "/nonexistent/canopy_CanopyServer.resources/Console")
        let head = HTTPRequest(
            method: .get, scheme: "http", authority: "127.0.0.1", path: "/users/ada",
            headerFields: [.accept: Self.browserAccept])
        let request = Request(head: head, body: RequestBody(buffer: .init()))
        let missing = ConsoleAssets.load(from: [nowhere])
        guard case .failure(let failure) = missing else {
            Issue.record("a folder that does not exist was taken as the bundle")
            return
        }
        let response = try #require(ConsoleController(assets: missing).respond(to: request))
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.contentType] == "text/plain; charset=utf-8")
        #expect(response.body.contentLength == failure.message.utf8.count + 1)
        #expect(failure.message.contains("looked in /nonexistent/canopy_CanopyServer.resources/Console"))
        #expect(failure.message.contains("next to the canopy-server binary"))
        #expect(!failure.message.contains("\n"))
    }

    /// Keys and values are users' data: the console's scripts build the page with text only, and
    /// its HTML carries no inline script or style, which the policy would refuse anyway.
    @Test func theBundledFilesSetNoMarkupFromData() throws {
        guard case .success(let assets) = ConsoleAssets.bundled else {
            Issue.record("the console's bundle was not found next to the test binary")
            return
        }
        let scripts = assets.files.filter { $0.key.hasSuffix(".js") }
        #expect(scripts.count >= 5)
        for (name, asset) in scripts {
            let text = String(decoding: asset.bytes, as: UTF8.self)
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
                #expect(!text.contains(sink), "\(name) uses \(sink)")
            }
        }
        let index = try #require(assets.files["index.html"])
        let html = String(decoding: index.bytes, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains(" style=") && !html.contains("<style"))
        for reference in ["/.console/main.js", "/.console/console.css", "/.console/icon.svg"] {
            #expect(html.contains(reference))
            #expect(assets.files[String(reference.dropFirst("/.console/".count))] != nil, "\(reference) missing")
        }
    }
}
