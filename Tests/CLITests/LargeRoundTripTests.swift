import CanopyServer
import CanopyTesting
import Foundation
import Testing

/// A 100 MB document imported and exported through the real binary, whose memory stays flat.
@Suite(.timeLimit(.minutes(10)))
struct LargeRoundTripTests {
    /// (Not on PostgreSQL: a debug build committing its rows there ran past the 10 minutes.)
    @Test(.enabled(if: !TestStore.isPostgres, "too slow for a debug build on PostgreSQL"))
    func aHundredMegabyteDocumentRoundTripsInBoundedMemory() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-large-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = folder.appendingPathComponent("original.json")
        let exported = folder.appendingPathComponent("exported.json")
        let size = try await onOwnThread { try LargeDocument.write(to: original, approximateBytes: 100_000_000) }

        try await withTestServer { server in
            let importStart = ContinuousClock.now
            let imported = try await CLIProcess.run(
                ["import", "large", original.path], environment: server.cliEnvironment, timeout: .seconds(600))
            let importTime = ContinuousClock.now - importStart
            #expect(imported.status == 0, "\(imported.stderr)")

            let exportStart = ContinuousClock.now
            let exporting = try await CLIProcess.run(
                ["export", "large"], environment: server.cliEnvironment, outputFile: exported.path,
                timeout: .seconds(600))
            let exportTime = ContinuousClock.now - exportStart
            #expect(exporting.status == 0, "\(exporting.stderr)")

            let exportedSize = (try? FileManager.default.attributesOfItem(atPath: exported.path)[.size] as? Int) ?? 0
            print(
                """
                100 MB round trip: \(size) bytes imported in \(importTime) (\(imported.memoryUse)); \
                \(exportedSize) bytes exported in \(exportTime) (\(exporting.memoryUse))
                """)
            // Memory, not time: the heap and buffers stay a small fraction of the 100 MB moved (the
            // resident total adds about 40 MB of mapped code for the debug binary).
            #expect(imported.memoryUse.peakAnonymous < 60 * 1024, "import: \(imported.memoryUse)")
            #expect(exporting.memoryUse.peakAnonymous < 60 * 1024, "export: \(exporting.memoryUse)")
        }

        // Both files parsed with Foundation and written back with sorted keys: equal values give
        // equal bytes (the document has no nulls, empty containers or sparse arrays, which the
        // database does not store as written).
        let (canonical, canonicalExport) = try await onOwnThread {
            (try LargeDocument.canonical(original), try LargeDocument.canonical(exported))
        }
        #expect(canonical.count > 90_000_000)
        // Compared to a Bool first: given the two values, a failed expectation would have Testing
        // compute their difference for its message, which for 100 MB runs for hours.
        let same = canonical == canonicalExport
        let differsAt = same ? nil : zip(canonical, canonicalExport).enumerated().first { $1.0 != $1.1 }?.offset
        let at = differsAt ?? min(canonical.count, canonicalExport.count)
        #expect(same, "the export differs from the imported file from byte \(at) (\(canonicalExport.count) bytes)")
    }
}

/// The 100 MB test document: deterministic, nested objects of many children (groups of records),
/// five 2 MB strings, an array of 2,000 objects and one string with escapes and non-ASCII text.
enum LargeDocument {
    /// Writes the document to `url`; returns its size in bytes.
    static func write(to url: URL, approximateBytes: Int) throws -> Int {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let file = try FileHandle(forWritingTo: url)
        defer { try? file.close() }
        var random = SeededGenerator(seed: 100)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ".utf8)
        func text(_ count: Int) -> String {
            String(
                decoding: (0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] },
                as: UTF8.self)
        }
        let bodies = (0..<16).map { _ in text(4096) }
        let blob = text(1024 * 1024)
        var buffer: [UInt8] = []
        var written = 0
        func emit(_ string: String) throws {
            buffer.append(contentsOf: string.utf8)
            if buffer.count >= 1 << 20 {
                try file.write(contentsOf: buffer)
                written += buffer.count
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try emit(#"{"text": "quote \" backslash \\ newline \n tab \t \u00e9t\u00e9 日本語", "blobs": {"#)
        for index in 0..<5 { try emit("\(index > 0 ? "," : "")\"b\(index)\": \"\(blob)\(blob)\"") }
        try emit(#"}, "list": ["#)
        for index in 0..<2000 {
            try emit("\(index > 0 ? "," : ""){\"i\": \(index), \"s\": \"\(bodies[index % 16].prefix(200))\"}")
        }
        try emit(#"], "numbers": ["#)
        try emit((0..<1000).map { "\(Double($0) * 1.5 + 0.25)" }.joined(separator: ", "))
        try emit(#"], "groups": {"#)
        let records = 200
        let groups = max(1, (approximateBytes - 11_000_000) / (records * 4300))
        for group in 0..<groups {
            try emit("\(group > 0 ? "," : "")\"g\(group)\": {\"meta\": {\"created\": \(1_700_000_000_000 + group), ")
            try emit("\"title\": \"Group \(group) é\"}, \"records\": {")
            for record in 0..<records {
                let tags = (0...(record % 5)).map { "\"t\($0)\"" }.joined(separator: ", ")
                try emit(
                    "\(record > 0 ? "," : "")\"r\(record)\": {\"name\": \"user \(group)-\(record)\", "
                        + "\"n\": \(group * 1000 + record), \"x\": \(Double(record) / 8 + 0.0625), "
                        + "\"flag\": \(record % 3 == 0), \"tags\": [\(tags)], "
                        + "\"body\": \"\(bodies[(group * 31 + record) % 16])\", "
                        + "\"nested\": {\"a\": {\"b\": {\"c\": \(record), \"d\": [\(record), \(group)]}}}}")
            }
            try emit("}}")
        }
        try emit("}}\n")
        try file.write(contentsOf: buffer)
        return written + buffer.count
    }

    /// The file's value parsed and written back with sorted keys.
    static func canonical(_ url: URL) throws -> Data {
        let value = try JSONSerialization.jsonObject(with: Data(contentsOf: url), options: [.fragmentsAllowed])
        return try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }
}
