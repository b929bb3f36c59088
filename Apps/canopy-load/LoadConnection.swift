import Foundation
import HummingbirdWSClient
import Logging
import NIOWebSocket
import Transport

/// One realtime-protocol connection driven by the load generator: raw message texts in and out,
/// without decoding on the hot path.
final class LoadConnection: Sendable {
    let incoming: AsyncStream<String>
    private let incomingContinuation: AsyncStream<String>.Continuation
    private let outgoing: AsyncStream<String>
    private let outgoingContinuation: AsyncStream<String>.Continuation
    private let task: Task<Void, Never>

    init(url: String, logger: Logger) {
        let (incoming, incomingContinuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
        let (outgoing, outgoingContinuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
        self.incoming = incoming
        self.incomingContinuation = incomingContinuation
        self.outgoing = outgoing
        self.outgoingContinuation = outgoingContinuation
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = 1 << 20
        configuration.autoPing = .disabled
        task = Task {
            _ = try? await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) {
                inbound, outbound, _ in
                let writer = Task {
                    for await text in outgoing {
                        for frame in FrameAssembler.frames(for: text) { try await outbound.write(.text(frame)) }
                    }
                    try await outbound.close(.normalClosure, reason: nil)
                }
                var assembler = FrameAssembler()
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    guard case .text(let frame) = message, case .message(let text)? = try assembler.append(frame) else {
                        continue
                    }
                    incomingContinuation.yield(text)
                }
                writer.cancel()
            }
            incomingContinuation.finish()
        }
    }

    func send(_ text: String) { outgoingContinuation.yield(text) }

    func close() { outgoingContinuation.finish() }

    /// Waits for the hello; returns false if the connection ended first.
    func awaitHello(_ iterator: inout AsyncStream<String>.Iterator) async -> Bool {
        while let text = await iterator.next() {
            if text.contains("\"t\":\"h\"") { return true }
        }
        return false
    }

    /// The request number of a response text (`{"t":"d","d":{"b":...,"r":N}}`), found without parsing.
    static func responseNumber(_ text: String) -> Int? {
        guard let range = text.range(of: "\"r\":") else { return nil }
        var number = 0
        var sawDigit = false
        for character in text[range.upperBound...].utf8 {
            guard character >= 48, character <= 57 else { break }
            number = number * 10 + Int(character - 48)
            sawDigit = true
        }
        return sawDigit ? number : nil
    }

    /// The integer after `marker` in `text` (used to carry send times inside pushed values).
    static func integer(after marker: String, in text: String) -> UInt64? {
        guard let range = text.range(of: marker) else { return nil }
        var number: UInt64 = 0
        var sawDigit = false
        for character in text[range.upperBound...].utf8 {
            guard character >= 48, character <= 57 else { break }
            number = number * 10 + UInt64(character - 48)
            sawDigit = true
        }
        return sawDigit ? number : nil
    }
}
