import Foundation

/// The figures of one storm round.
struct StormRound: Encodable {
    var round: Int
    var clients: Int
    var back: Int
    var allBack: Bool
    /// Over clients: the time from the cut to being back.
    var backTime: LatencyFigures?
    /// When the last client was back, in seconds after the cut.
    var lastBackSeconds: Double?
    /// Clients whose listens were answered on a new connection (back or not yet shown the write).
    var restored: Int
    /// Over clients: the time from the cut to their listens being answered on a new connection,
    /// whether or not the write after the cut had been made by then.
    var restoreTime: LatencyFigures?
    /// With --restart: from the signal until the new server accepted connections (with --nodes,
    /// the stopped node is started again only after another took the namespace over).
    var serverDownSeconds: Double?
    /// With --nodes: the port of the node that served the namespace and was stopped.
    var restartedPort: Int?
    /// From the cut until the server acknowledged the round's write (`nil`: not within the round).
    var writeAfterCutSeconds: Double?
    var connectAttempts: Int
    /// Attempts that failed (`nil` with --sdk: the SDK does not show its attempts, only connections).
    var failedAttempts: Int?
    var mostAttemptsByOneClient: Int
    /// Pushes of a client's own, unchanged data after the cut (0 when every hash was taken; `nil`
    /// with --sdk, where a push of unchanged data raises no event to count).
    var ownDataResent: Int?
    var refusedListens: Int
    /// With --restart: CPU time the new server process spent starting, before it accepted connections.
    var serverStartCPUSeconds: Double?
    /// CPU time of the server from the cut (after a restart: from accepting) until the last client was back.
    var serverCPUSeconds: Double?
    var serverCPUMicrosecondsPerClient: Double?
    var loadGeneratorCPUSeconds: Double
    /// The kernel's count of connections dropped because a listening socket's accept queue was full.
    var listenQueueOverflows: Int?
    var listenQueueDrops: Int?

    func describe() -> [String] {
        var lines: [String] = []
        var head = "round \(round): \(back) of \(clients) clients back"
        if let backTime, let lastBackSeconds {
            head += String(
                format: "; time from the cut: p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, last %.0f ms", backTime.p50Ms,
                backTime.p90Ms, backTime.p99Ms, lastBackSeconds * 1000)
        }
        lines.append(head)
        if let restoreTime {
            lines.append(
                String(
                    format:
                        "listens restored (write or not): %d clients; p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, last %.0f ms",
                    restored, restoreTime.p50Ms, restoreTime.p90Ms, restoreTime.p99Ms, restoreTime.maxMs))
        }
        var detail = ""
        if let serverDownSeconds { detail += String(format: "server down %.0f ms; ", serverDownSeconds * 1000) }
        detail +=
            writeAfterCutSeconds.map { String(format: "write after the cut acknowledged at %.0f ms; ", $0 * 1000) }
            ?? "write after the cut NOT acknowledged within the round; "
        if let failedAttempts {
            detail += String(
                format: "%d connection attempts (%d failed, at most %d by one client)", connectAttempts, failedAttempts,
                mostAttemptsByOneClient)
        } else {
            detail += "\(connectAttempts) connections (at most \(mostAttemptsByOneClient) by one client)"
        }
        if let ownDataResent { detail += "; own data resent to \(ownDataResent)" }
        if refusedListens > 0 { detail += "; \(refusedListens) listens refused" }
        lines.append(detail)
        var cpu = ""
        if let serverStartCPUSeconds { cpu += String(format: "server start CPU %.2f s; ", serverStartCPUSeconds) }
        if let serverCPUSeconds, let serverCPUMicrosecondsPerClient {
            cpu += String(
                format: "server restore CPU %.2f s = %.0f µs per client; ", serverCPUSeconds,
                serverCPUMicrosecondsPerClient)
        }
        cpu += String(format: "load generator CPU %.2f s", loadGeneratorCPUSeconds)
        if let listenQueueOverflows, let listenQueueDrops {
            cpu += "; listen queue overflows \(listenQueueOverflows), drops \(listenQueueDrops)"
        }
        lines.append(cpu)
        return lines
    }
}

/// The `--json` object of a storm run.
struct StormReport: Encodable {
    var scenario: String
    var mode: String
    var server: String
    /// canopy-server processes (more than one: nodes over one PostgreSQL database).
    var nodes: Int
    var namespace: String
    var clients: Int
    var listensPerClient: Int
    var payloadBytes: Int
    var machine: MachineInfo
    /// How the clients are simulated.
    var clientModel: String
    /// How long the clients took to connect and listen at the start.
    var connectSeconds: Double
    /// Every client back in every round.
    var allBack: Bool
    var rounds: [StormRound]
}
