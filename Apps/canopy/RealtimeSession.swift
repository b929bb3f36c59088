import Canopy
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection through the Canopy SDK (for `listen` and `server-time`): the database with the
/// token set, once it is connected.
struct RealtimeSession {
    let database: Database

    /// Connects to the database of `connection` and waits until the server said hello; throws
    /// ``CLIError/unreachable(_:)`` at once when nothing accepts connections there (the SDK would
    /// keep trying), after `--timeout` seconds without a realtime connection, and
    /// ``CLIError/permissionDenied(_:)`` when the server refuses the token.
    static func connect(_ connection: ConnectionOptions) async throws(CLIError) -> RealtimeSession {
        do {
            try await connection.withREST { rest in try await rest.checkReachable() }
        } catch let error as CLIError {
            throw error
        } catch {
            throw .unreachable("server unreachable: \(error)")
        }
        let url = connection.databaseURL
        let database = Database.database(url: url)
        do {
            if let path = connection.caFilePath {
                database.serverTrust = try .addingCertificateAuthorities(pemFile: URL(fileURLWithPath: path))
            } else if let pin = connection.testOnlyPinSha256 {
                database.serverTrust = try .trustingSelfSignedCertificate(sha256: pin)
            }
        } catch {
            throw .invalidInput("\(error)")
        }
        if let token = connection.authToken {
            database.setAuthToken(token)
            database.observeAuthState { state in
                if case .refused(let status, let reason) = state {
                    OutputFile.printError("permission denied: the server refused the token (\(status)): \(reason)")
                    exit(CLIError.permissionDenied("").exitCode)
                }
            }
        }
        let connected = database.reference(withPath: ".info/connected")
        let timeout = connection.timeout
        let isConnected = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    for try await snapshot in connected.values where snapshot.value as? Bool == true { return true }
                } catch {}
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard isConnected else {
            throw .unreachable(
                "server unreachable: no realtime connection to \(url) within \(String(format: "%g", timeout)) s")
        }
        return RealtimeSession(database: database)
    }

    /// Reports on stderr when the connection drops and when it is back (the SDK reconnects by itself).
    func reportConnectionChanges() {
        let wasConnected = ConnectionFlag(true)
        database.reference(withPath: ".info/connected").observe(.value) { snapshot in
            let connected = snapshot.value as? Bool == true
            switch (wasConnected.exchange(connected), connected) {
            case (true, false): OutputFile.printError("connection lost; reconnecting")
            case (false, true): OutputFile.printError("reconnected")
            default: break
            }
        }
    }

    /// Waits until SIGINT (Ctrl-C) or SIGTERM arrives; returns the signal.
    static func waitForInterrupt() async -> Int32 {
        for number in [SIGINT, SIGTERM] {
            signal(number) { received in receivedSignal.store(received, ordering: .relaxed) }
        }
        while true {
            let received = receivedSignal.load(ordering: .relaxed)
            if received != 0 { return received }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// The signal a handler installed by ``RealtimeSession/waitForInterrupt()`` received (0 for none).
private let receivedSignal = Atomic<Int32>(0)

/// A boolean shared with callbacks.
private final class ConnectionFlag: Sendable {
    private let value: Mutex<Bool>

    init(_ value: Bool) { self.value = Mutex(value) }

    /// Sets the flag and returns what it was.
    func exchange(_ newValue: Bool) -> Bool {
        value.withLock { current in
            let old = current
            current = newValue
            return old
        }
    }
}
