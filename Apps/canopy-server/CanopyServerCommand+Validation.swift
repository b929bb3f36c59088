import ArgumentParser
import CanopyServer
import Logging

/// An integer option, its environment variable, and the values it takes.
struct IntegerSetting {
    let flag: String
    let variable: String
    let value: KeyPath<CanopyServerCommand, Int>
    let range: ClosedRange<Int>

    var expected: String {
        range.upperBound == .max
            ? "an integer of at least \(range.lowerBound)"
            : "an integer from \(range.lowerBound) to \(range.upperBound)"
    }
}

/// A duration option in seconds, its environment variable, and the values it takes.
struct SecondsSetting {
    let flag: String
    let variable: String
    let value: KeyPath<CanopyServerCommand, Double>
    /// The smallest value; `nil`: any value above 0.
    let minimum: Double?

    /// The longest duration any option takes (about 31 years): longer ones overflow the server's clocks.
    static let maximum: Double = 1_000_000_000

    var expected: String {
        let lower = minimum.map { "at least \(Int($0))" } ?? "more than 0"
        return "a number of seconds, \(lower) and at most \(Int(Self.maximum))"
    }

    func accepts(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds <= Self.maximum && (minimum.map { seconds >= $0 } ?? (seconds > 0))
    }
}

extension CanopyServerCommand {
    static var integerSettings: [IntegerSetting] {
        [
            IntegerSetting(flag: "--port", variable: "CANOPY_PORT", value: \.port, range: 0...65535),
            IntegerSetting(
                flag: "--max-message-bytes", variable: "CANOPY_MAX_MESSAGE_BYTES", value: \.maxMessageBytes,
                range: 1024...Int.max),
            IntegerSetting(
                flag: "--max-pending-outbound-bytes", variable: "CANOPY_MAX_PENDING_OUTBOUND_BYTES",
                value: \.maxPendingOutboundBytes, range: 65536...Int.max),
            IntegerSetting(
                flag: "--max-pending-request-bytes", variable: "CANOPY_MAX_PENDING_REQUEST_BYTES",
                value: \.maxPendingRequestBytes, range: 65536...Int.max),
            IntegerSetting(
                flag: "--max-total-pending-outbound-bytes", variable: "CANOPY_MAX_TOTAL_PENDING_OUTBOUND_BYTES",
                value: \.maxTotalPendingOutboundBytes, range: 65536...Int.max),
            IntegerSetting(
                flag: "--max-uncommitted-writes", variable: "CANOPY_MAX_UNCOMMITTED_WRITES",
                value: \.maxUncommittedWrites,
                range: 1...Int.max),
            IntegerSetting(
                flag: "--max-query-indexes-per-node", variable: "CANOPY_MAX_QUERY_INDEXES_PER_NODE",
                value: \.maxQueryIndexesPerNode, range: 1...Int.max),
            IntegerSetting(
                flag: "--max-listens-per-connection", variable: "CANOPY_MAX_LISTENS_PER_CONNECTION",
                value: \.maxListensPerConnection, range: 1...Int.max),
            IntegerSetting(
                flag: "--max-on-disconnect-bytes", variable: "CANOPY_MAX_ON_DISCONNECT_BYTES",
                value: \.maxOnDisconnectBytes,
                range: 1024...Int.max),
            IntegerSetting(
                flag: "--max-open-namespaces", variable: "CANOPY_MAX_OPEN_NAMESPACES", value: \.maxOpenNamespaces,
                range: 1...Int.max),
            IntegerSetting(
                flag: "--auth-max-token-bytes", variable: "CANOPY_AUTH_MAX_TOKEN_BYTES", value: \.authMaxTokenBytes,
                range: 256...Int.max),
        ]
    }

    static var secondsSettings: [SecondsSetting] {
        [
            SecondsSetting(
                flag: "--lease-duration", variable: "CANOPY_LEASE_DURATION", value: \.leaseDuration, minimum: 1),
            SecondsSetting(
                flag: "--heartbeat-interval", variable: "CANOPY_HEARTBEAT_INTERVAL", value: \.heartbeatInterval,
                minimum: nil),
            SecondsSetting(
                flag: "--sse-keepalive-interval", variable: "CANOPY_SSE_KEEPALIVE_INTERVAL",
                value: \.sseKeepaliveInterval,
                minimum: nil),
            SecondsSetting(
                flag: "--namespace-idle-timeout", variable: "CANOPY_NAMESPACE_IDLE_TIMEOUT",
                value: \.namespaceIdleTimeout,
                minimum: nil),
            SecondsSetting(
                flag: "--query-index-idle-timeout", variable: "CANOPY_QUERY_INDEX_IDLE_TIMEOUT",
                value: \.queryIndexIdleTimeout, minimum: nil),
            SecondsSetting(
                flag: "--shutdown-timeout", variable: "CANOPY_SHUTDOWN_TIMEOUT", value: \.shutdownTimeout, minimum: nil),
            SecondsSetting(
                flag: "--tls-check-interval", variable: "CANOPY_TLS_CHECK_INTERVAL", value: \.tlsCheckInterval,
                minimum: nil),
            SecondsSetting(
                flag: "--auth-clock-skew", variable: "CANOPY_AUTH_CLOCK_SKEW", value: \.authClockSkew, minimum: 0),
        ]
    }

    static let booleanVariables = ["CANOPY_IN_MEMORY", "CANOPY_FSYNC", "CANOPY_EMULATOR", "CANOPY_CREATE_NAMESPACES"]

    static let logLevels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")

    /// Checks every option and every `CANOPY_…` variable that is set, whether or not an option
    /// overrides it, so that a mistake in the environment is never silently replaced by a default.
    /// Each refusal is one line: which option or variable, what it is, what it must be.
    func validate() throws {
        for setting in Self.integerSettings {
            if let text = env(setting.variable), Int(text).map(setting.range.contains) != true {
                throw ValidationError("\(setting.variable) must be \(setting.expected), not \"\(text)\"")
            }
            let value = self[keyPath: setting.value]
            guard setting.range.contains(value) else {
                throw ValidationError("\(setting.flag) must be \(setting.expected), not \(value)")
            }
        }
        for setting in Self.secondsSettings {
            if let text = env(setting.variable), Double(text).map(setting.accepts) != true {
                throw ValidationError("\(setting.variable) must be \(setting.expected), not \"\(text)\"")
            }
            let value = self[keyPath: setting.value]
            guard setting.accepts(value) else {
                throw ValidationError("\(setting.flag) must be \(setting.expected), not \(value)")
            }
        }
        for name in Self.booleanVariables where env(name) != nil && envFlag(name) == nil {
            throw ValidationError("\(name) must be true or false (or 1 or 0), not \"\(env(name) ?? "")\"")
        }
        if let text = env("CANOPY_LOG_LEVEL"), Logger.Level(rawValue: text.lowercased()) == nil {
            throw ValidationError("CANOPY_LOG_LEVEL must be one of \(Self.logLevels), not \"\(text)\"")
        }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level must be one of \(Self.logLevels), not \"\(logLevel)\"")
        }
        if let text = env("CANOPY_REST_FORWARDING"), RESTForwarding(rawValue: text) == nil {
            throw ValidationError("CANOPY_REST_FORWARDING must be auto, redirect or proxy, not \"\(text)\"")
        }
        guard RESTForwarding(rawValue: restForwarding) != nil else {
            throw ValidationError("--rest-forwarding must be auto, redirect or proxy, not \"\(restForwarding)\"")
        }
        if let text = env("CANOPY_TRUSTED_PROXIES") {
            do { _ = try IPNetwork.list(parsing: text) } catch {
                throw ValidationError("CANOPY_TRUSTED_PROXIES: \(error)")
            }
        }
        if let trustedProxies {
            do { _ = try IPNetwork.list(parsing: trustedProxies) } catch {
                throw ValidationError("--trusted-proxies: \(error)")
            }
        }
        let certificate = tlsCertFile ?? env("CANOPY_TLS_CERT_FILE")
        let key = tlsKeyFile ?? env("CANOPY_TLS_KEY_FILE")
        if (certificate == nil) != (key == nil) {
            throw ValidationError(
                certificate == nil
                    ? "--tls-key-file (CANOPY_TLS_KEY_FILE) needs --tls-cert-file (CANOPY_TLS_CERT_FILE): give both or neither"
                    : "--tls-cert-file (CANOPY_TLS_CERT_FILE) needs --tls-key-file (CANOPY_TLS_KEY_FILE): give both or neither"
            )
        }
    }
}
