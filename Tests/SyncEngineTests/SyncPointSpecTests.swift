import Foundation
import Testing
import Tree

/// The 112 event-generation cases of `Fixtures/syncPointSpec.json`, at the root and nested.
struct SyncPointSpecTests {
    static func loadCases() throws -> [JSONValue] {
        let url = try #require(
            Bundle.module.url(forResource: "syncPointSpec", withExtension: "json", subdirectory: "Fixtures"))
        guard case .array(let cases) = try JSONValue(parsing: Data(contentsOf: url)) else {
            Issue.record("syncPointSpec.json is not an array")
            return []
        }
        return cases
    }

    @Test func allCasesPassAtRootAndNested() throws {
        let cases = try Self.loadCases()
        #expect(cases.count == 112)
        var passed: [Path: Int] = [:]
        let prefixes: [Path] = [.root, "nested/location"]
        for prefix in prefixes {
            for spec in cases {
                let name = spec["name"]?.stringValue ?? "?"
                guard case .array(let steps)? = spec["steps"] else {
                    Issue.record("\(name): no steps")
                    continue
                }
                do {
                    try SyncPointSpecRunner(name: name, steps: steps, prefix: prefix).run()
                    passed[prefix, default: 0] += 1
                } catch {
                    Issue.record("\(error)")
                }
            }
        }
        let root = passed[.root, default: 0]
        let nested = passed["nested/location", default: 0]
        print("syncPointSpec: \(root)/\(cases.count) passed at root, \(nested)/\(cases.count) nested")
        #expect(root == cases.count)
        #expect(nested == cases.count)
    }
}
