import Logging
import Synchronization

/// The handler of the SDK's loggers: it lets debug messages through while
/// ``Database/setLoggingEnabled(_:)`` is on, whatever the level of the handler it wraps, and
/// passes everything else to that handler.
struct VerboseLogHandler: LogHandler {
    /// Whether debug logging is on, for every database.
    static let isEnabled = Atomic<Bool>(false)

    var wrapped: any LogHandler

    var logLevel: Logger.Level {
        get { Self.isEnabled.load(ordering: .relaxed) ? min(wrapped.logLevel, .debug) : wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) { wrapped.log(event: event) }
}

extension Logger {
    /// This logger, answering ``Database/setLoggingEnabled(_:)``.
    var answeringLoggingSwitch: Logger {
        guard !(handler is VerboseLogHandler) else { return self }
        var logger = self
        logger.handler = VerboseLogHandler(wrapped: handler)
        return logger
    }
}
