extension ServerConfiguration {
    /// Whether `host` can be ``advertiseHost``: a host name or IPv4 address, or a bracketed IPv6
    /// address, with an optional port (`s-node1.example.com:9000`, `10.0.0.7`, `[::1]:9000`).
    ///
    /// ```swift
    /// ServerConfiguration.isValidAdvertisedHost("s-node1:9001")       // true
    /// ServerConfiguration.isValidAdvertisedHost("http://node1:9001")  // false: no scheme
    /// ```
    public static func isValidAdvertisedHost(_ host: String) -> Bool {
        var name = Substring(host)
        var port: Substring?
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: close)...]
            name = name[name.index(after: name.startIndex)..<close]
            guard !name.isEmpty, name.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return false }
                port = rest.dropFirst()
            }
        } else {
            if let colon = name.firstIndex(of: ":") {
                port = name[name.index(after: colon)...]
                name = name[..<colon]
            }
            let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == ".") }
            guard !name.isEmpty, name.count <= 253, name.allSatisfy(allowed) else { return false }
        }
        if let port {
            guard let number = Int(port), (1...65535).contains(number) else { return false }
        }
        return true
    }
}
