import Synchronization
import Tree

/// The update blocks an app registered by name (``Database/registerTransaction(named:_:)``), for
/// transactions that are kept on the device and run again after a restart.
final class TransactionRegistry: Sendable {
    /// The block, given the data and the argument the transaction was run with (`null` for none).
    typealias Block = @Sendable (MutableData, JSONValue) -> TransactionResult

    private let blocks = Mutex<[String: Block]>([:])

    func register(_ name: String, _ block: @escaping Block) { blocks.withLock { $0[name] = block } }

    func block(named name: String) -> Block? { blocks.withLock { $0[name] } }

    func isRegistered(_ name: String) -> Bool { blocks.withLock { $0[name] != nil } }
}
