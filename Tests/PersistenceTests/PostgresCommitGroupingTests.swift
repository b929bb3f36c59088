import ServerStorage
import Testing
import Tree

@testable import PostgresStore

/// How a batch's row operations are grouped for `canopy_commit` (whose result, applied to a real
/// PostgreSQL, the store's randomized equivalence test checks).
struct PostgresCommitGroupingTests {
    @Test func independentLeafWritesBecomeOneRunOfEachKind() throws {
        let writes = try (0..<3).map { try StoredWrite("users/u\($0)/score", .number(Double($0))) }
        let grouped = PostgresServerStore.grouped(try RowPlan.operations(for: writes))
        let kinds = grouped.map { operation -> String in
            switch operation {
            case .deleteRow: "row"
            case .deleteBelow: "below"
            case .upsert: "upsert"
            default: "other"
            }
        }
        #expect(kinds == kinds.sorted { Self.rank($0) < Self.rank($1) }, "\(grouped)")
        #expect(kinds.filter { $0 == "upsert" }.count == 3)
        #expect(kinds.filter { $0 == "below" }.count == 3)
    }

    @Test func aDeleteOfSomethingUpsertedEarlierStartsANewRun() {
        let operations: [RowOperation] = [
            .upsert(path: "a/b", text: "1"),
            .deleteBelow("a"),
            .upsert(path: "a", text: "2"),
            .upsert(path: "c", text: "3"),
            .deleteRow("c"),
            .upsert(path: "c", text: "4"),
        ]
        #expect(
            PostgresServerStore.grouped(operations) == [
                .upsert(path: "a/b", text: "1"),
                .deleteBelow("a"),
                .upsert(path: "a", text: "2"),
                .upsert(path: "c", text: "3"),
                .deleteRow("c"),
                .upsert(path: "c", text: "4"),
            ])
    }

    @Test func operationsThatReadTheStoreStayInPlace() {
        let operations: [RowOperation] = [
            .upsert(path: "x", text: "1"),
            .pruneEmptyAncestors(of: "p/q"),
            .deleteRow("y"),
            .setPriority(of: "z", text: "5"),
            .deleteAll,
        ]
        #expect(PostgresServerStore.grouped(operations) == operations)
    }

    private static func rank(_ kind: String) -> Int { ["row": 0, "below": 1, "upsert": 2][kind] ?? 3 }
}
