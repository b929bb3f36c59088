import Foundation
import Tree

/// The parts of a REST request Canopy reads: location, namespace and query-string options.
struct RESTRequest {
    /// `/.settings/rules.json`.
    var isRulesDocument = false
    /// `/.settings/rules/simulate.json` or `/.settings/rules/refusals.json`.
    var rulesTool: RulesTool?
    var path: Path = .root
    var parameters: [String: String] = [:]

    /// The admin's tools beside the rules document (see ``RESTController/rulesTool(_:_:rest:caller:database:)``).
    enum RulesTool: String {
        /// `POST`: what the rules decide for a request described in the body.
        case simulate
        /// `GET`: the last requests the rules refused.
        case refusals
    }

    enum ParseError: Error {
        case notJSONPath
        case invalidPath(String)
    }

    /// Parses `/a/b.json?x=y`. Query-string values are percent-decoded without turning `+` into a
    /// space (clients send JSON values with a raw `+`).
    init(path rawPath: String, query: String?) throws(ParseError) {
        let decodedPath = rawPath.removingPercentEncoding ?? rawPath
        guard decodedPath.hasSuffix(".json") else { throw .notJSONPath }
        let location = String(decodedPath.dropLast(".json".count))
        if location == "/.settings/rules" {
            isRulesDocument = true
        } else if location.hasPrefix("/.settings/rules/") {
            guard let tool = RulesTool(rawValue: String(location.dropFirst("/.settings/rules/".count))) else {
                throw .invalidPath("\(location) is not a rules endpoint (simulate, refusals)")
            }
            rulesTool = tool
        } else {
            do {
                path = try Path(validating: location)
            } catch {
                throw .invalidPath(error.description)
            }
        }
        for pair in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            parameters[name] = value
        }
    }

    /// The namespace: `?ns=`, else the first label of a Host that is not an IP or localhost.
    func namespace(host: String?, default defaultNamespace: String) -> String {
        if let ns = parameters["ns"], !ns.isEmpty { return ns }
        guard let host else { return defaultNamespace }
        let name = host.split(separator: ":").first.map(String.init) ?? host
        if name == "localhost" || name.hasPrefix("[") || name.allSatisfy({ $0.isNumber || $0 == "." }) {
            return defaultNamespace
        }
        guard let label = name.split(separator: ".").first, name.contains(".") else { return defaultNamespace }
        return String(label)
    }
}
