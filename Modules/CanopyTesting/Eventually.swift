/// Waits until `condition` holds, checking it every `interval` until `timeout` has passed; returns
/// whether it held. Tests wait for the state they check with it rather than for a fixed time, so
/// they hold on a busy machine.
///
/// ```swift
/// #expect(await eventually { server.metrics.listenersActive == 0 })
/// ```
public func eventually(
    timeout: Duration = .seconds(30), interval: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return true }
        try? await Task.sleep(for: interval)
    }
    return (try? await condition()) == true
}

/// Waits until `condition` holds, as ``eventually(timeout:interval:_:)`` does, for a step a test
/// cannot go on without: throws ``ClusterTestError/timedOut(_:)`` naming `what` when it still does
/// not hold after `timeout`.
///
/// ```swift
/// try await waitUntil("writes after the kill") { writer.count >= 20 }
/// ```
public func waitUntil(
    _ what: String, timeout: Duration = .seconds(120), interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws {
    guard await eventually(timeout: timeout, interval: interval, condition) else {
        throw ClusterTestError.timedOut(what)
    }
}
