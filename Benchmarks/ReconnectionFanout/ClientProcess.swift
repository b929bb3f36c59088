import Dispatch
import Foundation
import ProcessResources
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The client side of a storm runs in a process of its own: this executable, started again with
/// ``environmentKey`` set. Each process then holds one end of every connection, which a usual hard
/// open-file limit allows for 10,000 clients where both ends in one process would not (20,000 here,
/// and raising a hard limit takes a privilege), and the benchmark's process measures the server
/// alone.
///
/// The two speak in lines: the benchmark writes `connect` or `cut`, the client process answers
/// `restored <data pushes> <dropped> <retries>` once every client's listens are answered (counts
/// since it started), or `failed <reason>`. End of input stops it.
enum StormClientProcess {
    static let environmentKey = "CANOPY_STORM_CLIENTS"

    /// In a process started as a storm's client side: serves the benchmark and exits. Otherwise
    /// returns at once.
    static func runIfRequested() {
        guard let request = ProcessInfo.processInfo.environment[environmentKey] else { return }
        let fields = request.split(separator: " ").compactMap { Int($0) }
        guard fields.count == 3 else {
            reply("failed \(environmentKey) must be `<clients> <port> <timeout seconds>`, not \(request)")
            exit(64)
        }
        serve(clients: fields[0], port: fields[1], timeout: .seconds(fields[2]))
        exit(0)
    }

    private static func serve(clients: Int, port: Int, timeout: Duration) {
        let storm: Storm
        do {
            try FileLimit.raise(forClients: clients)
            storm = try Storm(clients: clients, port: port)
        } catch {
            reply("failed \(error)")
            return
        }
        while let command = readLine() {
            do {
                switch command {
                case "connect": try storm.connectAll(timeout: timeout)
                case "cut": try storm.cutAll(timeout: timeout)
                default:
                    reply("failed unknown command \(command)")
                    continue
                }
                let counters = storm.counters
                reply(
                    "restored \(counters.dataPushes.load(ordering: .relaxed)) \(counters.dropped.load(ordering: .relaxed)) "
                        + "\(counters.retries.load(ordering: .relaxed))")
            } catch {
                reply("failed \(error)")
            }
        }
        storm.stop()
    }

    private static func reply(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The benchmark's handle on a storm's client process.
final class StormClients: Sendable {
    /// What the client process counted since it started.
    struct Counts {
        var dataPushes: Int
        var dropped: Int
        var retries: Int
    }

    let clientCount: Int
    private let process: Mutex<Process>
    private let commands: FileHandle
    private let replies: FileHandle
    private let pending = Mutex<[UInt8]>([])
    /// Blocking reads of the replies happen here, off the threads the server's tasks run on.
    private let reader = DispatchQueue(label: "canopy.storm-clients.replies")

    /// Starts this executable again as the client side of a storm of `clients` clients of the
    /// server at `127.0.0.1:port`.
    init(clients: Int, port: Int, timeout: Duration) throws(StormError) {
        clientCount = clients
        guard let executable = Bundle.main.executableURL else {
            throw .clientProcess("this executable's path is unknown")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = []
        var environment = ProcessInfo.processInfo.environment
        environment[StormClientProcess.environmentKey] = "\(clients) \(port) \(timeout.components.seconds)"
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            throw .clientProcess("could not start \(executable.path): \(error)")
        }
        self.process = Mutex(process)
        commands = input.fileHandleForWriting
        replies = output.fileHandleForReading
        // The parent's copies of the child's ends, so that the child's exit ends the replies.
        try? input.fileHandleForReading.close()
        try? output.fileHandleForWriting.close()
    }

    /// Connects every client and waits until each one listens.
    func connect() async throws(StormError) -> Counts { try await send("connect") }

    /// Resets every client's socket and waits until each one listens again on a new connection.
    func cut() async throws(StormError) -> Counts { try await send("cut") }

    /// Ends the client process (its connections close with it) and waits for it.
    func stop() {
        try? commands.close()
        let process = process.withLock { $0 }
        process.waitUntilExit()
    }

    private func send(_ command: String) async throws(StormError) -> Counts {
        do {
            try commands.write(contentsOf: Data((command + "\n").utf8))
        } catch {
            throw .clientProcess("could not send `\(command)`: \(error)")
        }
        let line = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            reader.async { continuation.resume(returning: self.readReply()) }
        }
        guard let line else { throw .clientProcess("it ended without answering `\(command)`") }
        let fields = line.split(separator: " ")
        guard fields.first == "restored", fields.count == 4 else { throw .clientProcess(line) }
        let numbers = fields.dropFirst().compactMap { Int($0) }
        guard numbers.count == 3 else { throw .clientProcess(line) }
        return Counts(dataPushes: numbers[0], dropped: numbers[1], retries: numbers[2])
    }

    /// Reads up to the next line break (blocking); `nil` at the end of the replies.
    private func readReply() -> String? {
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let line = pending.withLock { pending -> String? in
                guard let end = pending.firstIndex(of: 10) else { return nil }
                defer { pending.removeSubrange(...end) }
                return String(decoding: pending[..<end], as: UTF8.self)
            }
            if let line { return line }
            let count = chunk.withUnsafeMutableBytes { read(replies.fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending.withLock { $0.append(contentsOf: chunk[..<count]) }
        }
    }
}
