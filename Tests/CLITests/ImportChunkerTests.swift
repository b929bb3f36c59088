import Foundation
@_spi(CustomByteBufferAllocator) import NIOCore
import Synchronization
import Testing
import Tree

@testable import CanopyCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The import's chunker on documents of the shapes users import, in memory: its writes rebuild the
/// document, and the buffers it fills grow with the document, not with the document times its
/// width (a wide node's update was copied whole for each child appended to it, so an import of
/// 400,000 children took minutes). Structural: buffer copies and allocations are counted through
/// the chunker's allocator; no time is measured.
struct ImportChunkerTests {
    /// `{"users": {"u0000000": {"bio": …, "name": …, "score": …}, …}}`: one node with `children`
    /// small children, as in a Firebase export's `users/`.
    static func wideNode(children: Int) -> String {
        let bio = String(repeating: "b", count: 200)
        let members = (0..<children).map { index in
            let key = "u" + String(repeating: "0", count: 7 - String(index).count) + String(index)
            return #""\#(key)":{"bio":"\#(bio)","name":"user \#(index)","score":\#(index)}"#
        }
        return #"{"users":{"# + members.joined(separator: ",") + "}}"
    }

    /// One node with `children` leaves.
    static func wideLeaves(children: Int) -> String {
        "{" + (0..<children).map { #""k\#($0)":"value \#($0) of the wide node""# }.joined(separator: ",") + "}"
    }

    /// A wide node two levels down, beside other data.
    static func nestedWideNode(children: Int) -> String {
        #"{"app":{"config":{"name":"demo"},"data":"# + wideNode(children: children) + #"},"z":1}"#
    }

    /// What the writes leave at the import path, applied in order as the server applies them.
    static func apply(_ writes: [ImportChunker.Write]) throws -> Node {
        var node = Node.empty
        for write in writes {
            let text = String(buffer: write.body)
            switch write {
            case .put:
                node = try Node(jsonText: text)
            case .patch(let keys, let names, _):
                guard case .object(let members) = try JSONValue(parsing: text) else {
                    Issue.record("an update's body is not an object: \(text.prefix(100))")
                    continue
                }
                // What the import's window relies on to send updates side by side.
                #expect(Set(members.keys) == names, "\(keys)")
                for (key, value) in members {
                    node = node.updating(at: Path(keys: (keys + [key]).map { ChildKey($0) }), to: try Node(json: value))
                }
            }
        }
        return node
    }

    /// Only updates of distinct children of one location may be in flight together: anything
    /// else could land out of order (a child replaced after the update into it, a repeated key's
    /// first value after its last).
    @Test func onlyUpdatesOfDistinctChildrenOfOneLocationAreIndependent() {
        let body = ByteBuffer(string: "{}")
        let users = ImportChunker.Write.patch(keys: ["users"], members: ["a", "b"], body: body)
        #expect(ImportChunker.Write.patch(keys: ["users"], members: ["c"], body: body).isIndependent(of: users))
        #expect(!ImportChunker.Write.patch(keys: ["users"], members: ["b", "c"], body: body).isIndependent(of: users))
        #expect(!ImportChunker.Write.patch(keys: ["users", "a"], members: ["x"], body: body).isIndependent(of: users))
        #expect(!ImportChunker.Write.patch(keys: [], members: ["users"], body: body).isIndependent(of: users))
        #expect(!ImportChunker.Write.put(body: body).isIndependent(of: users))
        #expect(!users.isIndependent(of: .put(body: body)))
    }

    /// The set that replaces the import path is cut small, where a member ends, so that the updates
    /// after it, which wait for it, can run side by side sooner, and no part of a member is left for
    /// an update of its own that the others wait for; they grow from ``ImportChunker/firstUpdateBytes``
    /// to `chunkBytes`.
    @Test func theFirstWriteIsCutSoonerThanTheRest() throws {
        let text = Self.wideNode(children: 20000)
        let chunkBytes = 1 << 20
        let writes = try text.utf8.withContiguousStorageIfAvailable { bytes in
            let reader = JSONStreamReader(bytes: UnsafeRawBufferPointer(bytes))
            var chunker = ImportChunker(reader: reader, basePath: "import", chunkBytes: chunkBytes, merge: false)
            var writes: [ImportChunker.Write] = []
            while let write = try chunker.next() { writes.append(write) }
            return writes
        }
        let all = try #require(writes)
        #expect(text.utf8.count > 2 * chunkBytes)
        guard case .put(let first) = all.first else {
            Issue.record("the first write is not a set")
            return
        }
        #expect(first.readableBytes <= ImportChunker.firstWriteBytes + 1024)
        // Every update after it is of whole children of the wide node, so all may be in flight.
        for write in all.dropFirst() {
            guard case .patch(let keys, _, _) = write else {
                Issue.record("a write after the first is not an update")
                continue
            }
            #expect(keys == ["users"], "an update of part of a member: \(keys)")
        }
        // Each update at most twice the one before it may have been, up to `chunkBytes`.
        let updates = all.dropFirst().map(\.body.readableBytes)
        for (index, size) in updates.enumerated() {
            let limit = min(chunkBytes, ImportChunker.firstUpdateBytes << index)
            #expect(size <= limit + 1024, "update \(index): \(updates)")
        }
        #expect(updates.filter { $0 > chunkBytes - 1024 }.count >= 2, "\(updates)")
        #expect(try Self.apply(all) == Node(jsonText: text))
    }

    /// The check pauses when it is told to (so that the import can give way, and stop once the
    /// server turned out not to be there), reads on from there when called again, and otherwise
    /// reads to the end.
    @Test func theCheckPausesWhenToldToAndReadsOnFromThere() throws {
        let text = Self.wideNode(children: 4000)
        let result = try text.utf8.withContiguousStorageIfAvailable { bytes in
            let reader = JSONStreamReader(bytes: UnsafeRawBufferPointer(bytes))
            var checker = ImportChunker(
                reader: reader, basePath: "import", chunkBytes: 1 << 20, merge: false, emit: false)
            let firstPause = try checker.check(pausingWhen: { true }) ? nil : reader.offset
            var pauses = 1
            while try !checker.check(pausingWhen: { true }) { pauses += 1 }
            return (firstPause, pauses, reader.offset)
        }
        let (firstPause, pauses, end) = try #require(result)
        #expect(try #require(firstPause) < text.utf8.count / 2)
        #expect(pauses > 2 && end == text.utf8.count)
        // Told nothing, it reads to the end at once.
        let whole = try text.utf8.withContiguousStorageIfAvailable { bytes in
            var checker = ImportChunker(
                reader: JSONStreamReader(bytes: UnsafeRawBufferPointer(bytes)), basePath: "import",
                chunkBytes: 1 << 20, merge: false, emit: false)
            return try checker.check()
        }
        #expect(whole == true)
        // A bad document is still refused after pauses.
        let bad = text.replacingOccurrences(of: "u0003999", with: "u0003.99")
        #expect(throws: ImportError.self) {
            try bad.utf8.withContiguousStorageIfAvailable { bytes in
                var checker = ImportChunker(
                    reader: JSONStreamReader(bytes: UnsafeRawBufferPointer(bytes)), basePath: "import",
                    chunkBytes: 1 << 20, merge: false, emit: false)
                while try !checker.check(pausingWhen: { true }) {}
            }
        }
    }

    @Test func wideNodesAreCutWithoutCopyingTheirUpdates() throws {
        let chunkBytes = 16 * 1024
        let shapes = [
            ("wide node", Self.wideNode(children: 4000)),
            ("wide leaves", Self.wideLeaves(children: 20000)),
            ("nested wide node", Self.nestedWideNode(children: 4000)),
        ]
        // One shape after the other: the counters are the process's.
        for (shape, text) in shapes {
            CountingAllocator.reset()
            let writes = try text.utf8.withContiguousStorageIfAvailable { bytes in
                let reader = JSONStreamReader(bytes: UnsafeRawBufferPointer(bytes))
                var chunker = ImportChunker(
                    reader: reader, basePath: "import", chunkBytes: chunkBytes, merge: false,
                    allocator: CountingAllocator.allocator)
                var writes: [ImportChunker.Write] = []
                while let write = try chunker.next() { writes.append(write) }
                return writes
            }
            let all = try #require(writes)
            let (allocations, allocatedBytes, copiedBytes) = CountingAllocator.figures
            let documentBytes = text.utf8.count
            #expect(try Self.apply(all) == Node(jsonText: text), "\(shape): the writes rebuild the document")
            #expect(all.count > documentBytes / chunkBytes, "\(shape): \(all.count) writes")
            #expect(
                all.allSatisfy { $0.body.readableBytes <= chunkBytes + 1024 },
                "\(shape): writes \(all.map(\.body.readableBytes).max() ?? 0) bytes long")
            // A buffer per write (and one being filled), each grown by doubling: a copy of the pending
            // update per child appended made a buffer per child and copied megabytes per child.
            #expect(copiedBytes == 0, "\(shape): \(copiedBytes) bytes copied for \(documentBytes) bytes of JSON")
            #expect(
                allocations <= 2 * all.count + 4, "\(shape): \(allocations) buffers for \(all.count) writes")
            #expect(
                allocatedBytes <= 4 * documentBytes,
                "\(shape): \(allocatedBytes) bytes allocated for \(documentBytes) bytes of JSON")
        }
    }
}

/// A ``ByteBufferAllocator`` that counts what buffers made by it allocate and copy.
enum CountingAllocator {
    private static let allocations = Atomic<Int>(0)
    private static let allocatedBytes = Atomic<Int>(0)
    private static let copiedBytes = Atomic<Int>(0)

    static let allocator = ByteBufferAllocator(
        allocate: { size in
            CountingAllocator.allocations.add(1, ordering: .relaxed)
            CountingAllocator.allocatedBytes.add(size, ordering: .relaxed)
            return malloc(size)
        },
        reallocate: { pointer, _, newSize in
            CountingAllocator.allocatedBytes.add(newSize, ordering: .relaxed)
            return realloc(pointer, newSize)
        },
        deallocate: { free($0) },
        copy: { destination, source, count in
            CountingAllocator.copiedBytes.add(count, ordering: .relaxed)
            destination.copyMemory(from: source, byteCount: count)
        })

    static func reset() {
        allocations.store(0, ordering: .relaxed)
        allocatedBytes.store(0, ordering: .relaxed)
        copiedBytes.store(0, ordering: .relaxed)
    }

    /// Buffers allocated, bytes allocated (growth included), bytes copied from one buffer to another.
    static var figures: (allocations: Int, allocatedBytes: Int, copiedBytes: Int) {
        (
            allocations.load(ordering: .relaxed), allocatedBytes.load(ordering: .relaxed),
            copiedBytes.load(ordering: .relaxed)
        )
    }
}
