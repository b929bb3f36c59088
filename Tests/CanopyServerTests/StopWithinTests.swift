import Synchronization
import Testing

@testable import CanopyServer

/// The server stops its PostgreSQL pool (which holds the node lock) from its own task, cancelled
/// by then: the wait for the pool must hold there, or a server started next under the same node
/// name finds the lock still taken.
@Suite(.timeLimit(.minutes(1)))
struct StopWithinTests {
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
        func set() { value.store(true, ordering: .sequentiallyConsistent) }
    }

    @Test func aCancelledCallerStillWaitsForTheTaskToEnd() async {
        let ended = Flag()
        // A task that takes a while to end after it is cancelled, as the pool does.
        let slow = Task<Void, Never> {
            while !Task.isCancelled { await Task.yield() }
            for _ in 0..<200 { await Task.yield() }
            ended.set()
        }
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await CanopyServer.stop(slow, within: .seconds(600))
            return ended.isSet
        }
        #expect(await caller.value, "stop returned before the task ended")
    }

    /// A stop that waited past its limit would hang here until the time limit fails the test.
    @Test func aTaskThatDoesNotEndIsLeftAfterTheLimit() async {
        let released = Flag()
        let stuck = Task<Void, Never> {
            // Ignores cancellation until released.
            while !released.isSet { await Task.yield() }
        }
        await CanopyServer.stop(stuck, within: .milliseconds(50))
        released.set()
        await stuck.value
    }
}
