import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Serves the browser console: its page for `GET` of a data location asking for HTML (`/users/ada`,
/// `/`; a path with no `.`, so never a REST path), and its files under `/.console/`.
struct ConsoleController {
    /// Where the console's files are served; no data path starts with it (keys cannot hold a `.`).
    static let consolePrefix = "/.console/"

    /// What a console answer may load and do: its own scripts, styles and connections only, no
    /// inline script or style, no plugin, no framing by another page.
    static let consoleContentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "worker-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        + "frame-ancestors 'none'"

    /// The console's files, or why they could not be found; `nil`: the bundle next to the binary,
    /// read at the first console request.
    var assets: Result<ConsoleAssets, ConsoleAssets.Missing>? = nil

    /// The console's answer to `request`; `nil` for every other request, which REST answers as
    /// before.
    func respond(to request: Request) -> Response? {
        guard request.method == .get || request.method == .head else { return nil }
        let rawPath = request.uri.path
        let name: String
        if rawPath.hasPrefix(Self.consolePrefix) {
            name = String(rawPath.dropFirst(Self.consolePrefix.count))
        } else {
            let path = rawPath.removingPercentEncoding ?? rawPath
            guard !path.contains("."), request.headers[.accept]?.contains("text/html") == true else { return nil }
            name = "index.html"
        }
        let files: ConsoleAssets
        switch assets ?? ConsoleAssets.bundled {
        case .success(let found): files = found
        case .failure(let missing):
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: .serviceUnavailable, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: missing.message + "\n")))
        }
        guard let asset = files.files[name] else {
            return RESTResponse.error(.notFound, "Not found: the console has no file \"\(name)\"")
        }
        var headers = HTTPFields()
        headers[.contentType] = asset.contentType
        headers[.cacheControl] = "no-cache"
        headers[.eTag] = asset.etag
        headers[.contentSecurityPolicy] = Self.consoleContentSecurityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        if request.headers[.ifNoneMatch] == asset.etag { return Response(status: .notModified, headers: headers) }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }
}
