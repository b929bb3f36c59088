import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a scenario's human-readable lines, its live progress and its `--json` figures go.
///
/// Lines go to standard output, or to standard error with `--json`, so that standard output holds
/// exactly one JSON object. When that stream is a terminal, progress is one line rewritten in
/// place; otherwise it is a plain line at most once a second, so logs and pipes stay readable.
final class Console: Sendable {
    /// Whether `--json` was given.
    let json: Bool
    private let stream: FileHandle
    private let isTerminal: Bool
    private let state = Mutex(State())

    private struct State {
        var progressShown = false
        var lastPlainProgress: UInt64 = 0
    }

    init(json: Bool) {
        self.json = json
        stream = json ? FileHandle.standardError : FileHandle.standardOutput
        isTerminal = isatty(json ? STDERR_FILENO : STDOUT_FILENO) == 1
    }

    /// Prints one line, after clearing a progress line left on the terminal.
    func line(_ text: String) {
        state.withLock { state in
            var output = state.progressShown ? "\r\u{1B}[K" : ""
            state.progressShown = false
            output += text + "\n"
            write(output)
        }
    }

    /// Shows where a run is: rewritten in place on a terminal, a plain line once a second otherwise.
    func progress(_ text: String) {
        state.withLock { state in
            if isTerminal {
                state.progressShown = true
                write("\r\u{1B}[K" + text)
                return
            }
            let now = monotonicNanoseconds()
            guard now - state.lastPlainProgress >= 1_000_000_000 else { return }
            state.lastPlainProgress = now
            write(text + "\n")
        }
    }

    /// Prints `value` as one JSON object on standard output (only with `--json`).
    func emit(_ value: some Encodable) throws {
        guard json else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        clearProgress()
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// Runs `body` while a task shows `status()` every quarter second (on a terminal) and clears it.
    func withProgress<T>(
        _ status: @escaping @Sendable () -> String, _ body: () async throws -> T
    ) async rethrows -> T {
        let ticker = Task {
            while !Task.isCancelled {
                progress(status())
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        defer { ticker.cancel() }
        let result: T
        do {
            result = try await body()
        } catch {
            ticker.cancel()
            _ = await ticker.value
            clearProgress()
            throw error
        }
        ticker.cancel()
        _ = await ticker.value
        clearProgress()
        return result
    }

    private func clearProgress() {
        state.withLock { state in
            if state.progressShown { write("\r\u{1B}[K") }
            state.progressShown = false
        }
    }

    private func write(_ text: String) {
        stream.write(Data(text.utf8))
    }
}
