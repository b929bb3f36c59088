/// A rule expression that cannot be compiled: what is wrong and where, as an offset in Unicode
/// scalars into the expression text. The document reader turns the offset into a line and column.
struct ExpressionError: Error {
    var offset: Int
    var reason: String
}
