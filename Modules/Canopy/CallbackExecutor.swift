import Dispatch

/// Runs the app's callbacks: a callback isolated to the main actor (one written in a `@MainActor`
/// class, say) on the main actor, any other on ``Database/callbackQueue`` (one isolated to another
/// actor is entered from there).
///
/// Each delivery is a task enqueued at once, while the caller still holds the repo's lock, on the
/// main actor or on this executor (which runs its jobs on the queue in order). So callbacks run in
/// the order their events happened: all of them when the queue is the main queue (the main actor
/// runs there), else those on the main actor and those on the queue each in order.
final class CallbackExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Calls `callback` with `argument`, after every callback handed over before it to the same
    /// actor or queue.
    func deliver<each Argument: Sendable>(
        _ callback: @escaping @isolated(any) @Sendable (repeat each Argument) -> Void,
        _ argument: repeat each Argument
    ) {
        if let isolation = callback.isolation, isolation === MainActor.shared {
            Task { @MainActor in await callback(repeat each argument) }
        } else {
            Task(executorPreference: self) { await callback(repeat each argument) }
        }
    }
}
