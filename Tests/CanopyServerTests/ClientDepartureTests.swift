import Synchronization
import Testing

@testable import CanopyServer

/// A client's leaving is acted on once, whether it comes before or after the action exists.
struct ClientDepartureTests {
    @Test func aClientThatLeftBeforeTheActionRunsItAtOnce() {
        let runs = RunCount()
        let departure = ClientDeparture()
        departure.left()
        departure.whenLeft(OnceAction { runs.increment() })
        #expect(runs.value == 1)
        departure.left()
        #expect(runs.value == 1)
    }

    @Test func aClientThatLeavesLaterRunsTheActionOnce() {
        let runs = RunCount()
        let departure = ClientDeparture()
        departure.whenLeft(OnceAction { runs.increment() })
        #expect(runs.value == 0)
        departure.left()
        departure.left()
        #expect(runs.value == 1)
    }

    @Test func leavingWhileTheActionIsGivenRunsItOnce() async {
        for _ in 0..<200 {
            let runs = RunCount()
            let departure = ClientDeparture()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { departure.left() }
                group.addTask { departure.whenLeft(OnceAction { runs.increment() }) }
                group.addTask { departure.left() }
            }
            #expect(runs.value == 1)
        }
    }
}

private final class RunCount: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
