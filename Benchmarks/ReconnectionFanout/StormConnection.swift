import NIOCore
import RealtimeClientSocket

/// The raw realtime connections of a storm: a ``RealtimeSocket`` whose delegate answers the hello
/// with the client's two listens and counts their replies. It reads frame bytes without building
/// strings, so that the client process stays a small part of what the machine spends.
enum StormConnection {
    /// Connects `client` to the server at `127.0.0.1:port`, at `target`. The connection reports to
    /// `client` from then on, its failure included.
    static func open(_ client: StormClient, port: Int, target: String) {
        var configuration = RealtimeSocket.Configuration()
        configuration.connectTimeout = .seconds(30)
        configuration.maxFrameSize = 1 << 20
        Task {
            do {
                let socket = try await RealtimeSocket.connect(
                    host: "127.0.0.1", port: port, target: target, configuration: configuration
                ) { ListenHandler(client: client) }
                client.connected(socket)
            } catch RealtimeSocketError.cannotConnect {
                client.failed()
            } catch {
                // The connection was made and has ended: its delegate told the client.
            }
        }
    }
}

/// Sends the client's listens when the server's hello comes, counts their `ok` replies, and tells
/// the client when the connection closes.
private final class ListenHandler: RealtimeSocketDelegate {
    private let client: StormClient
    private var answered: Set<Int> = []

    init(client: StormClient) { self.client = client }

    func received(_ frame: ByteBuffer, output: inout RealtimeSocketOutput) {
        let bytes = frame.readableBytesView
        if bytes.contains(Pattern.hello) {
            for listen in client.listens { output.send(listen) }
        } else if bytes.contains(Pattern.dataPush) || bytes.contains(Pattern.mergePush) {
            client.storm.counters.dataPushed()
        } else if let number = bytes.integer(after: Pattern.requestNumber), bytes.contains(Pattern.ok) {
            if answered.insert(number).inserted, answered.count == client.listens.count { client.restored() }
        }
    }

    func closed(_ reason: RealtimeSocketCloseReason) {
        client.closed()
    }
}

/// Byte patterns of the server messages a storm client tells apart (keys as the server writes them).
private enum Pattern {
    static let hello = Array(#""t":"h""#.utf8)
    static let dataPush = Array(#""a":"d""#.utf8)
    static let mergePush = Array(#""a":"m""#.utf8)
    static let requestNumber = Array(#""r":"#.utf8)
    static let ok = Array(#""s":"ok""#.utf8)
}

extension ByteBufferView {
    fileprivate func contains(_ pattern: [UInt8]) -> Bool { firstRange(of: pattern) != nil }

    /// The decimal number right after `pattern`, if there is one.
    fileprivate func integer(after pattern: [UInt8]) -> Int? {
        guard var index = firstRange(of: pattern)?.upperBound else { return nil }
        var number = 0
        let start = index
        while index < endIndex, (48...57).contains(self[index]) {
            number = number * 10 + Int(self[index] - 48)
            index += 1
        }
        return index > start ? number : nil
    }
}
