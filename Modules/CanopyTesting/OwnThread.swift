import Foundation

/// Runs long synchronous work (building or parsing a 100 MB document) on a thread of its own, and
/// waits for it without holding a thread of Swift's cooperative pool.
///
/// That pool has one thread per core: on a 2-core CI machine, two tests that compute for seconds
/// without suspending stop every other test's tasks for as long, and those tests' clients stop
/// answering pings and miss their hellos.
///
/// ```swift
/// let canonical = try await onOwnThread { try LargeDocument.canonical(url) }
/// ```
public func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        // Room for the recursion of deeply nested JSON.
        thread.stackSize = 16 << 20
        thread.start()
    }
}
