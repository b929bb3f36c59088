import ServiceLifecycle
import UnixSignals

/// Picks up a renewed certificate without a restart: reads the files again on `SIGHUP` (when the
/// server handles signals) and every ``ServerConfiguration/tlsCheckInterval``.
struct TLSRenewal: Service {
    let certificate: ServedCertificate
    let checkInterval: Duration
    let handlesSignal: Bool

    func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if handlesSignal {
                    group.addTask {
                        for await _ in await UnixSignalsSequence(trapping: .sighup) {
                            certificate.reload(reason: .signal)
                        }
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
