import CanopyTesting
import Foundation
import Synchronization

#if os(Linux)
import Glibc

/// Debian's nginx running the sample configuration of `Docs/nginx/canopy.conf` (the file
/// `Docs/OPERATIONS.md` shows), for one test: its listen port, certificate paths and upstream
/// port filled in, started in the foreground as this process's child in a temporary folder, and
/// stopped by ``stop()``.
///
/// The sample is used as it stands, but for those values and one line: nginx connects to Canopy
/// from 127.0.0.2 (`proxy_bind`), so that the proxy's address and the client's (127.0.0.1) differ
/// in Canopy's log.
final class NginxProxy: Sendable {
    /// Where Debian installs nginx.
    static let executable = "/usr/sbin/nginx"
    /// The address nginx connects to Canopy from.
    static let proxyAddress = "127.0.0.2"

    /// Whether the nginx tests run: when nginx is installed, and always under `CI=true` (where a
    /// missing nginx is a failure: `.ci/run` installs it).
    static var isEnabled: Bool {
        FileManager.default.isExecutableFile(atPath: executable)
            || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case sampleChanged(String)
        case didNotStart(String)

        var description: String {
            switch self {
            case .notInstalled: "nginx was not found at \(NginxProxy.executable); install Debian's nginx"
            case .sampleChanged(let line):
                "Docs/nginx/canopy.conf no longer holds exactly one \"\(line)\"; update NginxProxy"
            case .didNotStart(let log): "nginx did not start: \(log)"
            }
        }
    }

    let port: Int
    let folder: String
    private let process: ChildProcess

    private init(port: Int, folder: String, process: ChildProcess) {
        self.port = port
        self.folder = folder
        self.process = process
    }

    /// `https://localhost:PORT`.
    var baseURL: String { "https://localhost:\(port)" }

    /// The sample configuration, as the documentation includes it.
    static func sample(packageFile: String = #filePath) throws -> String {
        let root = URL(fileURLWithPath: packageFile).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("Docs/nginx/canopy.conf"), encoding: .utf8)
    }

    /// Starts nginx on a free port of 127.0.0.1, serving `certificate` and passing requests on
    /// to Canopy at `127.0.0.1:upstreamPort`.
    static func start(certificate: TestCertificate, upstreamPort: Int) async throws -> NginxProxy {
        guard FileManager.default.isExecutableFile(atPath: executable) else { throw Failure.notInstalled }
        let folder = try TestServer.makeTemporaryDirectory()
        let port = try freePort()
        var site = try sample()
        for (line, replacement) in [
            ("listen 443 ssl;", "listen 127.0.0.1:\(port) ssl;"),
            (
                "ssl_certificate     /etc/letsencrypt/live/canopy.example.com/fullchain.pem;",
                "ssl_certificate \(certificate.certificatePath);"
            ),
            (
                "ssl_certificate_key /etc/letsencrypt/live/canopy.example.com/privkey.pem;",
                "ssl_certificate_key \(certificate.keyPath);"
            ),
            (
                "proxy_pass http://127.0.0.1:9000;",
                "proxy_pass http://127.0.0.1:\(upstreamPort);\n        proxy_bind \(proxyAddress);"
            ),
        ] {
            guard site.components(separatedBy: line).count == 2 else { throw Failure.sampleChanged(line) }
            site = site.replacingOccurrences(of: line, with: replacement)
        }
        try site.write(toFile: "\(folder)/canopy.conf", atomically: true, encoding: .utf8)
        let main = """
            daemon off;
            master_process off;
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log info;
            events { worker_connections 256; }
            http {
                access_log \(folder)/access.log;
                client_body_temp_path \(folder)/body;
                proxy_temp_path \(folder)/proxy;
                fastcgi_temp_path \(folder)/fastcgi;
                uwsgi_temp_path \(folder)/uwsgi;
                scgi_temp_path \(folder)/scgi;
                include \(folder)/canopy.conf;
            }
            """
        try main.write(toFile: "\(folder)/nginx.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess.launch(
            executable, ["-p", folder, "-e", "\(folder)/error.log", "-c", "\(folder)/nginx.conf"],
            standardOutput: .null, standardError: .null)
        let proxy = NginxProxy(port: port, folder: folder, process: process)
        let listening = await eventually(timeout: .seconds(30)) {
            process.isRunning && canConnect(port: port)
        }
        guard listening else {
            await proxy.stop()
            throw Failure.didNotStart((try? String(contentsOfFile: "\(folder)/error.log", encoding: .utf8)) ?? "")
        }
        return proxy
    }

    /// nginx's error log so far.
    var errorLog: String { (try? String(contentsOfFile: "\(folder)/error.log", encoding: .utf8)) ?? "" }

    /// Stops nginx and removes its folder.
    func stop() async {
        process.send(SIGKILL)
        _ = await eventually(timeout: .seconds(20)) { !process.isRunning }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A port nothing on 127.0.0.1 listens on now.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else { throw Failure.didNotStart("no free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections at 127.0.0.1:`port`.
    private static func canConnect(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
#endif
