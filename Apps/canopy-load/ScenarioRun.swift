import ProcessResources

/// What every scenario does around its own work: its lines on the console (standard error with
/// `--json`), the machine it runs on said first, the open-file check, the servers it starts stopped
/// however it ends, and its figures printed, then emitted as one JSON object.
///
/// ```swift
/// let run = try ScenarioRun(json: json, connections: connections + 1, what: "\(connections) idle connections")
/// let report = try await run.withServer(options, launchOptions) { server in
///     try await measure(server, machine: run.machine, console: run.console)
/// }
/// try run.report(report)
/// ```
struct ScenarioRun: Sendable {
    let console: Console
    let machine: MachineInfo

    /// Starts a run: throws when `connections` descriptors (when given) do not fit under the
    /// open-file limit, then says which machine it runs on.
    init(json: Bool, connections: Int? = nil, what: String = "") throws(LoadError) {
        console = Console(json: json)
        if let connections { try FileLimit.check(connections: connections, what: what) }
        machine = MachineInfo.current()
        console.line(machine.describe)
    }

    /// Runs `body` against the server at `--server`: started first when `--launch` was given (with
    /// the scenario's `serverArguments`), found to accept connections, and stopped once `body`
    /// ended, whether or not it threw.
    func withServer<Result>(
        _ options: ServerOptions, _ launchOptions: LaunchOptions, serverArguments: [String] = [],
        _ body: (ServersUnderLoad) async throws -> Result
    ) async throws -> Result {
        let endpoint = try options.endpoint()
        return try await withServers(
            launching: {
                try await launchOptions.start(at: endpoint, console: console, serverArguments: serverArguments)
            }, reachableAt: options, givenPid: launchOptions.serverPid, body)
    }

    /// Starts servers with `launching`, runs `body` against them once the address of `options`
    /// (when given) accepts connections, and stops them once `body` ended, whether or not it threw.
    func withServers<Result>(
        launching: () async throws -> LaunchedServers, reachableAt options: ServerOptions? = nil,
        givenPid: Int32? = nil, _ body: (ServersUnderLoad) async throws -> Result
    ) async throws -> Result {
        let servers = try await launching()
        do {
            try await options?.checkReachable()
            let result = try await body(ServersUnderLoad(launched: servers.list, givenPid: givenPid))
            await servers.shutDown()
            return result
        } catch {
            await servers.shutDown()
            throw error
        }
    }

    /// Prints the report's lines, then emits it with `--json`.
    func report(_ report: some ScenarioReport) throws {
        for line in report.describe() { console.line(line) }
        try console.emit(report)
    }
}
