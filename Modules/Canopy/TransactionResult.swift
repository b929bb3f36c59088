/// What a transaction's update block decides (Firebase's `TransactionResult`).
///
/// ```swift
/// ref.runTransactionBlock { data in
///     data.value = (data.value as? Int ?? 0) + 1
///     return TransactionResult.success(withValue: data)
/// }
/// ```
public struct TransactionResult: Sendable {
    let data: MutableData?

    /// Write `value`'s data.
    public static func success(withValue value: MutableData) -> TransactionResult {
        TransactionResult(data: value)
    }

    /// Write nothing; the transaction completes with `committed` false.
    public static func abort() -> TransactionResult { TransactionResult(data: nil) }
}
