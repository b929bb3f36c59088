import Foundation
import NIOCore
import NIOPosix

/// A `redis-server` for the fan-out baseline: one the tool starts on a free port (no snapshots, no
/// append-only file, so it does no disk work), or one it is given.
struct RedisServer: Sendable {
    let host: String
    let port: Int
    /// The process, when the tool started it.
    let process: ChildProcess?
    /// The folder of its log (removed at the end), when the tool started it.
    let folder: String?

    var address: String { "\(host):\(port)" }

    /// Starts `redis-server` (found on PATH unless `executable` is given) on a free port of 127.0.0.1,
    /// accepting up to `clients` connections, and waits until it accepts them.
    static func launch(executable: String?, clients: Int, console: Console) async throws -> RedisServer {
        let binary = try executable ?? ChildProcess.locate("redis-server", preferring: [])
        let port = try await freePort()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "canopy-load-redis-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let logPath = (folder as NSString).appendingPathComponent("redis-server.log")
        let child = try ChildProcess.launch(
            "redis-server", executable: binary,
            arguments: [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder,
                "--maxclients", String(clients + 64), "--daemonize", "no", "--loglevel", "warning",
            ],
            logPath: logPath)
        guard await child.waitUntilAccepting(host: "127.0.0.1", port: port, timeout: .seconds(30)) else {
            await child.stop()
            throw LoadError.serverDidNotStart(
                name: "redis-server", address: "127.0.0.1:\(port)", seconds: 30, log: logPath)
        }
        console.line("started \(binary) (pid \(child.pid)) at 127.0.0.1:\(port), --save '' --appendonly no")
        return RedisServer(host: "127.0.0.1", port: port, process: child, folder: folder)
    }

    /// A server the tool was given as `host:port`.
    static func given(_ address: String) throws -> RedisServer {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (1...65535).contains(port)
        else { throw LoadError.redis("--redis must be host:port, got \(address)") }
        return RedisServer(host: String(address[..<colon]), port: port, process: nil, folder: nil)
    }

    /// Stops the server and removes its folder, if the tool started it.
    func shutDown() async {
        await process?.stop()
        if let folder { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// A TCP port of 127.0.0.1 free at the time of asking (bound, read, released).
    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port
        try await channel.close()
        guard let port else { throw LoadError.redis("could not find a free port") }
        return port
    }
}
