import ServiceLifecycle
import UnixSignals

/// Picks up a renewed certificate without a restart: reads the files again on each signal of
/// `hangups` (`SIGHUP`, trapped before the server listens, when it handles signals) and every
/// ``ServerConfiguration/tlsCheckInterval``.
struct TLSRenewal: Service {
    let certificate: ServedCertificate
    let checkInterval: Duration
    let hangups: UnixSignalsSequence?

    func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let hangups {
                    group.addTask {
                        for await _ in hangups { certificate.reload(reason: .signal) }
                    }
                }
                group.addTask {
                    while (try? await Task.sleep(for: checkInterval)) != nil {
                        certificate.reload(reason: .fileCheck)
                    }
                }
            }
        }
    }
}
