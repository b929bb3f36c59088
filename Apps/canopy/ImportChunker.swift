import NIOCore
import Tree

/// Cuts a JSON document into writes of about `chunkBytes` each, reading it once from a
/// ``JSONStreamReader``, so that a file of any size is imported in bounded memory and every
/// request stays under the server's body limit.
///
/// Containers are gathered as compact JSON while they fit. Once the gathered text passes
/// `chunkBytes`, the outermost container being gathered is written as it stands (a set: it
/// replaces what was there), and from then on each of the open containers has its further
/// children written one by one, gathered into multi-path updates (PATCH) of their parent, each
/// child gathered whole again while it fits. Without `merge` the first write is a PUT at the
/// import path, so it replaces what was there; with `merge` the top-level children are written
/// into it, each replacing the child of the same key.
///
/// Arrays are written as objects keyed `"0"`, `"1"`, … (how the database stores them). Keys, depth
/// (32 levels with the import path), string lengths (10 MB) and numbers (finite) are checked as
/// the server checks them; a failure names the location in the document and the line.
///
/// Memory: the gathered text (at most `chunkBytes` plus one token) and one pending update (at
/// most `chunkBytes` plus one entry). Gathered text becomes a request body without being copied
/// when it is written on its own. Each byte of the document is appended to a buffer a bounded
/// number of times, whatever the document's shape: the pending update is only ever appended to in
/// place (never through a copy of it, which would make its storage shared and every later append
/// copy all of it). All buffers come from `allocator`.
struct ImportChunker {
    /// One request, relative to the import path.
    enum Write: Sendable {
        /// Replace the value at the import path.
        case put(body: ByteBuffer)
        /// A multi-path update of the children of the location at `keys` below the import path;
        /// `members` are the keys of those children.
        case patch(keys: [String], members: Set<String>, body: ByteBuffer)

        var body: ByteBuffer {
            switch self {
            case .put(let body), .patch(_, _, let body): body
            }
        }

        /// Whether this write may run while `other`, written before it, has not been answered:
        /// updates of distinct children of one location, which no order between them changes.
        func isIndependent(of other: Write) -> Bool {
            guard case .patch(let keys, let members, _) = self, case .patch(let otherKeys, let otherMembers, _) = other
            else { return false }
            return keys == otherKeys && members.isDisjoint(with: otherMembers)
        }
    }

    /// A container being read; the one at `frames[i]` lies at `path[..<i]`.
    private struct Frame {
        var isArray: Bool
        /// Members read so far.
        var count = 0
        /// Whether its text is being gathered in ``ImportChunker/gathered``.
        var isGathered: Bool
    }

    private let reader: JSONStreamReader
    /// Depth of the import path.
    private let baseDepth: Int
    private let chunkBytes: Int
    private let merge: Bool
    /// Without `emit`, the document is only checked (nothing is gathered or written).
    private let emit: Bool
    private var frames: [Frame] = []
    /// The keys of the innermost open container below the import path (one per open container but
    /// the outermost): kept as a stack, so entering a container allocates nothing.
    private var path: [String] = []
    private let allocator: ByteBufferAllocator
    /// The text of the gathered containers. When the outermost is the child of a split container,
    /// it starts `{"key":`, so that it is already the body of the update that writes it alone.
    private var gathered: ByteBuffer
    /// The location a pending update is for, below the import path; `nil` when none is pending.
    private var updateKeys: [String]?
    /// The pending update's body so far (`{` and the members); empty when none is pending.
    private var updateBody: ByteBuffer
    /// The keys of the pending update's members.
    private var updateMembers: Set<String> = []
    private var ready: [Write] = []
    private var started = false
    private var finished = false

    /// Whether gathered text was cut into a write yet.
    private var splitOnce = false

    /// The most text gathered before it is written, cut at the next value. The first cut comes
    /// much sooner: that write (a set of the import path) must be answered before any other starts,
    /// while the updates after it can be in flight together (see ``Write/isIndependent(of:)``).
    private var gatherLimit: Int { splitOnce ? chunkBytes : min(chunkBytes, Self.firstWriteLimit) }

    /// Gathered text at least this long is written once a container in it closes, so that a cut
    /// leaves no part of a member behind (an update of its own, which nothing else may pass).
    private var closingCutBytes: Int { splitOnce ? chunkBytes : min(chunkBytes, Self.firstWriteBytes) }

    /// How long the first write gets before it is cut where a member ends: it is answered alone, and
    /// most of its time is the namespace's first commit, so it carries little.
    static let firstWriteBytes = 16 * 1024

    /// The most text of the first write, cut at the next value when no member ends sooner.
    static let firstWriteLimit = 256 * 1024

    /// The most text of the first update.
    static let firstUpdateBytes = 512 * 1024

    /// Updates written so far.
    private var updatesWritten = 0

    /// The most text of the next update: ``firstUpdateBytes``, doubling with each update up to
    /// `chunkBytes`, so that a short document is still several updates the server takes side by
    /// side, and a long one mostly large updates, each with less to do per byte.
    private var updateLimit: Int { min(chunkBytes, Self.firstUpdateBytes << min(updatesWritten, 16)) }

    /// A new buffer's capacity: it grows by doubling as text is appended.
    private static let initialCapacity = 1024

    init(
        reader: JSONStreamReader, basePath: Path, chunkBytes: Int, merge: Bool, emit: Bool = true,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) {
        self.reader = reader
        self.baseDepth = basePath.count
        self.chunkBytes = chunkBytes
        self.merge = merge
        self.emit = emit
        self.allocator = allocator
        gathered = allocator.buffer(capacity: Self.initialCapacity)
        updateBody = allocator.buffer(capacity: Self.initialCapacity)
    }

    /// Reads the document, checking it, without writing anything; returns `true` at its end. Every
    /// few thousand values it asks `pause`, and when that is true it returns `false`: called again,
    /// it reads on from there.
    mutating func check(pausingWhen pause: () -> Bool = { false }) throws(ImportError) -> Bool {
        var steps = 0
        do {
            while !finished {
                try step()
                steps += 1
                if steps % 4096 == 0, pause() { return false }
            }
        } catch {
            throw importError(error)
        }
        return true
    }

    /// The next write, or `nil` once the document is done.
    mutating func next() throws(ImportError) -> Write? {
        do {
            while ready.isEmpty, !finished { try step() }
        } catch {
            throw importError(error)
        }
        return ready.isEmpty ? nil : ready.removeFirst()
    }

    private func importError(_ error: any Error) -> ImportError {
        switch error {
        case let error as JSONSyntaxError: .syntax(error)
        case let error as ImportError: error
        default: .syntax(JSONSyntaxError(reason: "\(error)", offset: reader.offset, line: 0, column: 0))
        }
    }

    /// Reads one member (or the top-level value, or the end of a container).
    private mutating func step() throws {
        guard started else {
            started = true
            try startDocument()
            return
        }
        guard let frame = frames.last else {
            try reader.expectEnd()
            flushUpdate()
            finished = true
            return
        }
        let key: String
        if frame.isArray {
            guard try reader.nextElement(first: frame.count == 0) else { return try closeFrame() }
            key = String(frame.count)
        } else {
            guard let name = try reader.nextKey(first: frame.count == 0) else { return try closeFrame() }
            if let problem = ChildKey.problem(with: name) {
                throw ImportError.data(
                    "invalid key \(JSONPrinter.quoted(name)) at \(location(path)): it \(problem)",
                    at: reader.currentLocation())
            }
            key = name
        }
        frames[frames.count - 1].count += 1
        if baseDepth + path.count + 1 > TreeLimits.maxDepth {
            throw ImportError.data(
                "\(location(path + [key])) is more than \(TreeLimits.maxDepth) levels deep (with the import "
                    + "path)",
                at: reader.currentLocation())
        }
        let kind = try reader.peekValue()
        switch kind {
        case .object, .array:
            if kind == .object { try reader.enterObject() } else { try reader.enterArray() }
            if emit {
                if !frame.isGathered { gathered.clear() }
                let separator = frame.isGathered ? (frame.count > 0 ? "," : "") : "{"
                Self.writeMember(key, isArray: frame.isArray, after: separator, before: "{", to: &gathered)
            }
            frames.append(Frame(isArray: kind == .array, isGathered: true))
            path.append(key)
        case .string, .number, .literal:
            try readScalar(at: path, key)
            guard emit else { return }
            // A value that would take the gathered text past the chunk size is written on its own:
            // no request is much over `chunkBytes` unless one value is.
            if frame.isGathered, gathered.readableBytes + reader.tokenLength > gatherLimit { splitGathered() }
            if frames[frames.count - 1].isGathered {
                Self.writeMember(key, isArray: frame.isArray, after: frame.count > 0 ? "," : "", to: &gathered)
                reader.writeToken(to: &gathered)
            } else {
                addScalar(key: key, isArray: frame.isArray, under: path)
            }
        }
    }

    private mutating func startDocument() throws {
        let kind = try reader.peekValue()
        switch kind {
        case .object, .array:
            if kind == .object { try reader.enterObject() } else { try reader.enterArray() }
            if emit, !merge { gathered.writeInteger(UInt8(ascii: "{")) }
            frames.append(Frame(isArray: kind == .array, isGathered: !merge))
        case .string, .number, .literal:
            guard !merge else {
                throw ImportError.data(
                    "--merge needs a JSON object (or array) at the top level, whose children it writes",
                    at: reader.currentLocation())
            }
            try readScalar(at: [], nil)
            if emit {
                var value = allocator.buffer(capacity: reader.tokenLength)
                reader.writeToken(to: &value)
                ready.append(.put(body: value))
            }
        }
    }

    /// Reads a scalar (the child `key` of the container at `keys`) and checks that the database can
    /// store it.
    private func readScalar(at keys: [String], _ key: String?) throws {
        let scalar = try reader.readScalar()
        if scalar.kind == .string, scalar.decodedLength > TreeLimits.maxStringBytes {
            let place = location(keys + (key.map { [$0] } ?? []))
            throw ImportError.data(
                "the string at \(place) is \(ByteCount(scalar.decodedLength)), over the "
                    + "\(ByteCount(TreeLimits.maxStringBytes)) a string may hold", at: reader.currentLocation())
        }
    }

    private mutating func closeFrame() throws {
        let frame = frames.removeLast()
        // The outermost container has no key of its own.
        let member = frames.isEmpty ? "" : path.removeLast()
        guard emit, frame.isGathered else { return }
        gathered.writeInteger(UInt8(ascii: "}"))
        guard let parent = frames.last else {
            ready.append(.put(body: gathered))
            gathered = allocator.buffer(capacity: Self.initialCapacity)
            return
        }
        // Inside a gathered parent the text stays where it is, until it is long enough to be cut
        // here; else it is a child of a split parent.
        guard !parent.isGathered else {
            if gathered.readableBytes >= closingCutBytes { splitGathered() }
            return
        }
        if updateKeys == path, updateBody.readableBytes + gathered.readableBytes <= updateLimit {
            // `{"key":{…}}` joins the pending update as `,"key":{…}`.
            updateMembers.insert(member)
            updateBody.writeInteger(UInt8(ascii: ","))
            gathered.moveReaderIndex(forwardBy: 1)
            updateBody.writeBuffer(&gathered)
            gathered.clear()
        } else {
            flushUpdate()
            // The gathered text is already the update's body: it becomes it without a copy.
            updateKeys = path
            updateMembers = [member]
            swap(&updateBody, &gathered)
        }
        if updateBody.readableBytes >= updateLimit { flushUpdate() }
    }

    /// Writes the outermost gathered container as it stands, and has every gathered container
    /// write its further children one by one.
    private mutating func splitGathered() {
        guard let first = frames.firstIndex(where: \.isGathered) else { return }
        splitOnce = true
        gathered.writeRepeatingByte(UInt8(ascii: "}"), count: frames.count - first)
        if first == 0 {
            ready.append(.put(body: gathered))
        } else {
            // The gathered text starts `{"key":`: close it and it is the update of its parent.
            gathered.writeInteger(UInt8(ascii: "}"))
            flushUpdate()
            ready.append(
                .patch(keys: Array(path[..<(first - 1)]), members: [path[first - 1]], body: gathered))
        }
        gathered = allocator.buffer(capacity: Self.initialCapacity)
        for index in first..<frames.count { frames[index].isGathered = false }
    }

    /// Adds the scalar just read, child `key` of the split container at `keys`, to the update of
    /// that container, sending the update first when it is for another location or would grow
    /// past `chunkBytes`.
    private mutating func addScalar(key: String, isArray: Bool, under keys: [String]) {
        if let pending = updateKeys,
            pending != keys || updateBody.readableBytes + reader.tokenLength + key.utf8.count > updateLimit
        {
            flushUpdate()
        }
        let separator = updateKeys == nil ? "{" : ","
        updateKeys = keys
        updateMembers.insert(key)
        Self.writeMember(key, isArray: isArray, after: separator, to: &updateBody)
        reader.writeToken(to: &updateBody)
        if updateBody.readableBytes >= updateLimit { flushUpdate() }
    }

    private mutating func flushUpdate() {
        guard let keys = updateKeys else { return }
        updateKeys = nil
        updateBody.writeInteger(UInt8(ascii: "}"))
        ready.append(.patch(keys: keys, members: updateMembers, body: updateBody))
        updatesWritten += 1
        updateBody = allocator.buffer(capacity: Self.initialCapacity)
        updateMembers = []
    }

    /// Writes `separator`, `key` as a JSON string, `:` and `suffix`, in one call (array indexes and
    /// most keys need no escapes).
    private static func writeMember(
        _ key: String, isArray: Bool, after separator: String, before suffix: String = "", to output: inout ByteBuffer
    ) {
        var quoted = key
        if !isArray, key.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            quoted = JSONPrinter.quoted(key)
            quoted.removeFirst()
            quoted.removeLast()
        }
        // One write into the buffer: each call to it checks its storage's exclusive access.
        let count = separator.utf8.count + quoted.utf8.count + 3 + suffix.utf8.count
        output.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { buffer in
            var index = 0
            for byte in separator.utf8 {
                buffer[index] = byte
                index += 1
            }
            buffer[index] = UInt8(ascii: "\"")
            let keyStart = index + 1
            let keyLength = quoted.withUTF8 { text in
                let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[keyStart...])
                destination.copyMemory(from: UnsafeRawBufferPointer(text))
                return text.count
            }
            index = keyStart + keyLength
            buffer[index] = UInt8(ascii: "\"")
            buffer[index + 1] = UInt8(ascii: ":")
            index += 2
            for byte in suffix.utf8 {
                buffer[index] = byte
                index += 1
            }
            return index
        }
    }

    private func location(_ keys: [String]) -> String { "/" + keys.joined(separator: "/") }
}

/// Why a document cannot be imported.
enum ImportError: Error, CustomStringConvertible {
    /// It is not JSON.
    case syntax(JSONSyntaxError)
    /// It is JSON the database cannot store; `at` says where the reader was.
    case data(String, at: JSONSyntaxError)

    var description: String {
        switch self {
        case .syntax(let error): "invalid JSON: \(error)"
        case .data(let message, let position): "\(message) (line \(position.line), column \(position.column))"
        }
    }
}
