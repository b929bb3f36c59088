import Foundation

/// A Linux network namespace joined to this host by a veth pair, for tests that cut a process off
/// the network: a server started in it (``launcher``) reaches this host at ``hostAddress`` and is
/// reached at ``address``; ``cut()`` takes the link down (packets in both directions are dropped,
/// connections stall without a reset, as in a real partition) and ``heal()`` brings it back.
///
/// Needs root and iproute2's `ip` (``isAvailable``).
///
/// ```swift
/// let network = try await NetworkNamespace.create()
/// let node = try await ServerProcess.start(
///     executable: binary, dataDirectory: folder, arguments: ["--host", network.address],
///     launcher: network.launcher, host: network.address)
/// try await network.cut()
/// ```
public final class NetworkNamespace: Sendable {
    public let name: String
    /// This host's end of the link.
    public let hostAddress: String
    /// The namespace's end of the link.
    public let address: String
    private let hostInterface: String

    static let ip = "/usr/sbin/ip"

    /// Whether namespaces can be made here: as root, with `ip` installed, and where making one
    /// works (tried once: a container may refuse it).
    public static let isAvailable: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: ip) else { return false }
        let probe = "canopy-probe-\(ProcessInfo.processInfo.processIdentifier)"
        func run(_ arguments: [String]) -> Bool {
            let process = try? ChildProcess.launch(ip, arguments, standardOutput: .null, standardError: .null)
            return process?.waitUntilExit() == .exit(0)
        }
        guard run(["netns", "add", probe]) else { return false }
        return run(["netns", "delete", probe])
    }()

    /// The command prefix that runs a program inside the namespace.
    public var launcher: [String] { [Self.ip, "netns", "exec", name] }

    private init(subnet: Int) {
        name = "canopy-test-\(subnet)"
        hostAddress = "10.201.\(subnet).1"
        address = "10.201.\(subnet).2"
        hostInterface = "cnpt\(subnet)h"
    }

    /// Creates a namespace on a free subnet of 10.201.0.0/16, its link up.
    public static func create() async throws -> NetworkNamespace {
        for _ in 0..<20 {
            let network = NetworkNamespace(subnet: Int.random(in: 1...250))
            let namespaceSide = "cnpt\(network.address.split(separator: ".")[2])c"
            guard try await run("netns", "add", network.name) == 0 else { continue }
            do {
                try await require("link", "add", network.hostInterface, "type", "veth", "peer", "name", namespaceSide)
                try await require("link", "set", namespaceSide, "netns", network.name)
                try await require("addr", "add", network.hostAddress + "/24", "dev", network.hostInterface)
                try await require("link", "set", network.hostInterface, "up")
                for command in [
                    ["addr", "add", network.address + "/24", "dev", namespaceSide],
                    ["link", "set", namespaceSide, "up"],
                    ["link", "set", "lo", "up"],
                ] {
                    try await require(["netns", "exec", network.name, ip] + command)
                }
            } catch {
                await network.remove()
                throw error
            }
            return network
        }
        throw NetworkNamespaceError.noFreeSubnet
    }

    /// Runs `body` on a new thread that joined this namespace, and returns what it returns. A thread
    /// `body` starts is in the namespace too (a new thread inherits its creator's), while the rest
    /// of the process stays where it was.
    public func onThreadInside<Value: Sendable>(
        _ body: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        let path = "/var/run/netns/\(name)"
        return try await onOwnThread {
            // Glibc's module leaves out `setns` (a _GNU_SOURCE declaration); the C library has it.
            typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else {
                throw NetworkNamespaceError.join(path, reason: "the C library has no setns")
            }
            let setNamespace = unsafeBitCast(symbol, to: SetNamespace.self)
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw NetworkNamespaceError.join(path, reason: String(cString: strerror(errno)))
            }
            defer { close(descriptor) }
            // CLONE_NEWNET
            guard setNamespace(descriptor, 0x4000_0000) == 0 else {
                throw NetworkNamespaceError.join(path, reason: String(cString: strerror(errno)))
            }
            return try body()
        }
    }

    /// Takes the link down: nothing crosses it until ``heal()``.
    public func cut() async throws {
        try await Self.require("link", "set", hostInterface, "down")
    }

    /// Brings the link back up.
    public func heal() async throws {
        try await Self.require("link", "set", hostInterface, "up")
    }

    /// Deletes the namespace and its link (stop the processes in it first).
    public func remove() async {
        _ = try? await Self.run("link", "delete", hostInterface)
        _ = try? await Self.run("netns", "delete", name)
    }

    @discardableResult
    private static func run(_ arguments: String...) async throws -> Int32 {
        try await ServerProcess.run(executable: ip, arguments: arguments, timeout: .seconds(30)).status
    }

    private static func require(_ arguments: String...) async throws {
        try await require(arguments)
    }

    private static func require(_ arguments: [String]) async throws {
        let (status, output) = try await ServerProcess.run(executable: ip, arguments: arguments, timeout: .seconds(30))
        guard status == 0 else { throw NetworkNamespaceError.command(["ip"] + arguments, output: output) }
    }
}

/// Why a ``NetworkNamespace`` could not be made or changed.
public enum NetworkNamespaceError: Error, CustomStringConvertible {
    case noFreeSubnet
    case command([String], output: String)
    /// A thread could not join the namespace at `path`.
    case join(String, reason: String)

    public var description: String {
        switch self {
        case .noFreeSubnet: "no free subnet in 10.201.0.0/16 for a network namespace"
        case .command(let command, let output): "\(command.joined(separator: " ")) failed: \(output)"
        case .join(let path, let reason): "could not join the network namespace \(path): \(reason)"
        }
    }
}
