import CanopyServer
import CanopyTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy-server` as a new user meets it: problems at start are one clear line and a non-zero exit.
@Suite(
    .enabled(
        if: serverExecutable != nil,
        "canopy-server is not built next to the tests; run `swift build --product canopy-server` first"))
struct ServerCommandTests {
    @Test func versionPrintsTheServerVersion() async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(executable: executable, arguments: ["--version"])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == CanopyServer.version)
    }

    @Test func aDataPathThatIsAFileStopsTheServerAtStart() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/not-a-folder"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))

        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--data", file])
        #expect(status != 0)
        #expect(
            output.contains("canopy-server: cannot use data folder \(file): it is a file, not a folder"),
            "output:\n\(output)")
        #expect(!output.contains("listening"))
    }

    @Test(.enabled(if: getuid() != 0, "root can write into any folder"))
    func anUnwritableDataFolderStopsTheServerAtStart() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer {
            chmod(folder, 0o700)
            try? FileManager.default.removeItem(atPath: folder)
        }
        chmod(folder, 0o500)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--data", folder])
        #expect(status != 0)
        #expect(output.contains("cannot use data folder \(folder): cannot create files in it"), "output:\n\(output)")
    }

    @Test func aMissingDataFolderIsCreated() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let data = folder + "/new/data"
        let server = try await ServerProcess.start(executable: executable, dataDirectory: data)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: data, isDirectory: &isDirectory) && isDirectory.boolValue)
        let write = try await TestServer.http(baseURL: server.baseURL, .PUT, "/a.json", body: "1")
        #expect(write.status == 200)
        await server.terminate()
    }

    @Test func anAddressInUseIsNamedWithItsPort() async throws {
        let executable = try #require(serverExecutable)
        try await withTestServer { taken in
            let (status, output) = try await ServerProcess.run(
                executable: executable, arguments: ["--port", String(taken.port), "--in-memory"])
            #expect(status != 0)
            #expect(
                output.contains("cannot listen on 127.0.0.1:\(taken.port): address already in use"),
                "output:\n\(output)")
        }
    }

    /// `CANOPY_IN_MEMORY` is honoured (the data path, a file, is never looked at), and SIGTERM
    /// logs the start and the end of the shutdown.
    @Test func inMemoryFromTheEnvironmentAndShutdownIsLogged() async throws {
        let executable = try #require(serverExecutable)
        let folder = try TestServer.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/not-a-folder"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))

        let server = try await ServerProcess.start(
            executable: executable, dataDirectory: file, environment: ["CANOPY_IN_MEMORY": "true"])
        #expect(try await TestServer.http(baseURL: server.baseURL, .PUT, "/a.json", body: "1").status == 200)
        await server.terminate()
        #expect(server.exitStatus == 0)
        #expect(server.log.contains("graceful shutdown started"), "log:\n\(server.log)")
        #expect(server.log.contains("canopy-server stopped"), "log:\n\(server.log)")
    }

    @Test func aBooleanVariableThatIsNotABooleanIsRefused() async throws {
        let executable = try #require(serverExecutable)
        let (status, output) = try await ServerProcess.run(
            executable: executable, arguments: ["--port", "0", "--in-memory"], environment: ["CANOPY_FSYNC": "maybe"])
        #expect(status != 0)
        #expect(output.contains("CANOPY_FSYNC must be true or false"), "output:\n\(output)")
    }
}
