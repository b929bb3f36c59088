/// What the console's connections view reads of a database.
extension Database {
    /// The number of listens of each of `subscriberIDs`.
    func listenCounts(of subscriberIDs: [Int]) -> [Int: Int] {
        Dictionary(uniqueKeysWithValues: subscriberIDs.map { ($0, listeners.listenCount(of: $0)) })
    }
}
