import Synchronization

/// Samples a namespace's epoch in PostgreSQL every quarter second, from creation to ``stop()``, so
/// that a step back during a fault shows (checkpoints only compare one fault's end with the
/// next's). A sample PostgreSQL cannot answer (while it restarts) is skipped.
public final class EpochMonitor: Sendable {
    private let taken = Mutex<[Int]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(store: PostgresTestCluster, namespace: String) {
        let sampler = Task { [self] in
            while !Task.isCancelled {
                if let epoch = try? await store.epoch(of: namespace) { self.taken.withLock { $0.append(epoch) } }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        task.withLock { $0 = sampler }
    }

    /// The epochs sampled so far, oldest first.
    public var samples: [Int] { taken.withLock { $0 } }

    public func stop() async {
        let sampler = task.withLock { $0 }
        sampler?.cancel()
        await sampler?.value
    }
}
