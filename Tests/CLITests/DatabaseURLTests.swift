import CanopyServer
import CanopyTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which server and namespace `canopy` talks to: `--url`, else `CANOPY_DATABASE_URL`, else
/// `http://127.0.0.1:9000` (the server's default namespace there).
@Suite(.timeLimit(.minutes(3)))
struct DatabaseURLTests {
    @Test func theEnvironmentNamesServerAndNamespaceAndURLOverridesIt() async throws {
        try await withTestServer { first in
            try await withTestServer { second in
                for (server, namespace, value) in [(first, "one", "1"), (first, "two", "2"), (second, "one", "3")] {
                    let put = try await server.http(.PUT, "/where.json?ns=\(namespace)", body: value)
                    #expect(put.status == 200)
                }
                func get(environment: String?, url: String?) async throws -> String {
                    let result = try await CLIProcess.run(
                        ["get", "where"] + (url.map { ["--url", $0] } ?? []),
                        environment: environment.map { ["CANOPY_DATABASE_URL": $0] } ?? [:])
                    #expect(result.status == 0, "\(result.stderr)")
                    return result.stdout
                }
                #expect(try await get(environment: "\(first.baseURL)?ns=one", url: nil) == "1\n")
                #expect(try await get(environment: "\(first.baseURL)?ns=two", url: nil) == "2\n")
                #expect(try await get(environment: "\(second.baseURL)?ns=one", url: nil) == "3\n")
                // --url wins over the environment: for another namespace, another server, and when
                // the environment's server is unreachable.
                #expect(try await get(environment: "\(first.baseURL)?ns=one", url: "\(first.baseURL)?ns=two") == "2\n")
                #expect(try await get(environment: "\(first.baseURL)?ns=one", url: "\(second.baseURL)?ns=one") == "3\n")
                #expect(
                    try await get(environment: "http://127.0.0.1:1?ns=one", url: "\(first.baseURL)?ns=one") == "1\n")
            }
        }
    }

    /// Whether nothing listens on 127.0.0.1:9000 now (this test's server is to take it).
    static func defaultPortIsFree() -> Bool {
        #if canImport(Glibc)
        let socketType = Int32(SOCK_STREAM.rawValue)
        #else
        let socketType = SOCK_STREAM
        #endif
        let descriptor = socket(AF_INET, socketType, 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // As the server binds: connections of an earlier run waiting out TIME_WAIT do not count.
        var reuse: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(9000).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return bound == 0
    }

    @Test(.enabled(if: defaultPortIsFree(), "127.0.0.1:9000, the default URL's port, is in use"))
    func withoutURLOrEnvironmentTheDefaultServerAndNamespaceAnswer() async throws {
        try await withTestServer(configure: { $0.port = 9000 }) { server in
            #expect(server.port == 9000)
            let put = try await server.http(.PUT, "/where.json", body: #""the default namespace""#)
            #expect(put.status == 200)
            _ = try await server.http(.PUT, "/where.json?ns=test", body: #""not the default""#)
            let result = try await CLIProcess.run(["get", "where"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == #""the default namespace""# + "\n")
        }
    }
}
