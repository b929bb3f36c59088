import CanopyTesting
import Foundation
import Testing

/// The tests' own way of starting programs (`ChildProcess`, in place of Foundation's `Process`,
/// whose `run()` can crash a test process holding many descriptors).
@Suite(.timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test func aChildKeepsOnlyItsStandardStreams() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Descriptors of this process, without close-on-exec, that a child must not hold.
        let held = (0..<50).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held { close(descriptor) } }
        let listing = folder + "/fds"
        _ = FileManager.default.createFile(atPath: listing, contents: nil)
        let child = try ChildProcess.launch(
            "/bin/sh", ["-c", "ls /proc/$$/fd"], standardOutput: .file(listing), standardError: .null)
        #expect(await child.exit() == .exit(0))
        let descriptors = try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").compactMap {
            Int($0)
        }
        #expect(Set(descriptors).isSubset(of: [0, 1, 2, 3]), "\(descriptors)")
    }

    @Test func itsEndIsToldAsAnExitOrASignal() async throws {
        let exits = try ChildProcess.launch("/bin/sh", ["-c", "exit 3"])
        #expect(await exits.exit() == .exit(3))
        #expect(exits.status == 3)
        let sleeps = try ChildProcess.launch("/bin/sleep", ["30"])
        #expect(sleeps.isRunning)
        sleeps.send(SIGKILL)
        #expect(await sleeps.exit() == .signal(SIGKILL))
        #expect(throws: ChildProcessError.self) { try ChildProcess.launch("/nonexistent/program", []) }
    }

    @Test func itRunsWhereAndWithWhatItIsGiven() async throws {
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pipe = Pipe()
        let child = try ChildProcess.launch(
            "/bin/sh", ["-c", "pwd; echo \"$GREETING\"; cat"], environment: ["GREETING": "hello"], directory: folder,
            standardInput: .file("/etc/hostname"), standardOutput: .pipe(pipe))
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(await child.exit() == .exit(0))
        let hostname = try String(contentsOfFile: "/etc/hostname", encoding: .utf8)
        let resolved = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path
        #expect(output == "\(resolved)\nhello\n\(hostname)", "\(output)")
    }
}
