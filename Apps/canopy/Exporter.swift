import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Tree

/// Writes the value at a path as JSON, fetching it in pieces of at most `budget` bytes, so a
/// database of any size is exported in bounded memory.
///
/// For each object it lists the keys a page at a time (`shallow=true`, `orderBy="$key"`,
/// `limitToFirst`, `startAfter`). The first child is exported on its own, the same way, which
/// measures it; then as many siblings as that measure says fit in half the budget are fetched
/// per request as a key range (`startAt`/`endAt`), their text copied as the server wrote it. A
/// range over the budget is retried smaller, and a child over the budget alone is exported on its
/// own, recursively; a leaf is streamed. So the server is never asked for a whole location of
/// unknown size, and a child much bigger than its siblings costs a few refused ranges.
///
/// The text is what a plain `GET` of the path answers, byte for byte when the data does not
/// change meanwhile: members in key order, objects whose keys are `0`…`n` with more than half
/// present as arrays (found by a pass over their keys).
///
/// The size of the whole is not known ahead, so progress is bytes; but when the exported
/// location's children all came in the first listing page, their number is known, and progress
/// also counts the children written (which gives a time left, taking them to be of one size).
final class Exporter {
    private let rest: RESTClient
    private let output: OutputFile
    private let budget: Int
    private let progress: Progress
    /// Keys per listing page: up to 1,000, fewer when keys are long (pages stay near 64 KB, since
    /// one is kept per level while a child is exported).
    private var pageSize = 1000
    /// Requests made.
    private(set) var requests = 0

    init(rest: RESTClient, output: OutputFile, budget: Int, progress: Progress) {
        self.rest = rest
        self.output = output
        self.budget = budget
        self.progress = progress
    }

    /// Writes the value at `path`.
    func export(_ path: Path) async throws(CLIError) {
        try await export(path, countsChildren: true)
    }

    /// Writes the value at `path`; with `countsChildren`, tells the progress how many children
    /// there are and how many are written, when they fit in one listing page.
    private func export(_ path: Path, countsChildren: Bool) async throws(CLIError) {
        guard var page = try await list(path, after: nil), let firstKey = page.keys.first else {
            return try await stream(path)
        }
        // Keys in more than one page: their number is not known before the last one.
        let counted = countsChildren && !page.isFull
        if counted { progress.expect(parts: page.keys.count, named: "children") }
        let isArray = Self.arrayIndex(firstKey) != nil ? try await isArrayLike(path, firstPage: page) : false
        var members = MemberWriter(isArray: isArray)
        var sizes = ChildSizes()
        try output.write(isArray ? "[" : "{")
        while true {
            try await writeChildren(page.keys, at: path, members: &members, sizes: &sizes, counted: counted)
            guard page.isFull, let last = page.keys.last, let next = try await list(path, after: last) else { break }
            page = next
        }
        try output.write(isArray ? "]" : "}")
        progress.update(output.count)
    }

    /// Writes the children `keys` (consecutive in key order) of the object at `path`; `counted`
    /// when they are all its children and progress counts them.
    private func writeChildren(
        _ keys: [String], at path: Path, members: inout MemberWriter, sizes: inout ChildSizes, counted: Bool
    ) async throws(CLIError) {
        var index = 0
        while index < keys.count {
            let count = min(sizes.fitting(in: budget / 2), keys.count - index)
            if count > 0 {
                if let answer = try await fetchRange(path, from: keys[index], to: keys[index + count - 1]) {
                    try writeMembers(of: answer, members: &members)
                    sizes.record(bytes: answer.readableBytes, children: count)
                    index += count
                    if counted { progress.completed(parts: index) }
                    progress.update(output.count)
                    continue
                }
                sizes.overflowed(count)
                if count > 1 { continue }
            }
            let before = output.count
            try members.begin(keys[index], output: output)
            try await export(path.child(ChildKey(keys[index])), countsChildren: false)
            // A child of unknown size measures its siblings; one too big for the budget does not.
            if count == 0 { sizes.record(bytes: output.count - before, children: 1) }
            index += 1
            if counted { progress.completed(parts: index) }
            progress.update(output.count)
        }
    }

    /// Writes the members of a range answer (`{"k": v, …}` in key order).
    private func writeMembers(of answer: ByteBuffer, members: inout MemberWriter) throws(CLIError) {
        let view = answer.readableBytesView
        guard let open = view.firstIndex(where: { !Self.isWhitespace($0) }), view[open] == UInt8(ascii: "{"),
            let close = view.lastIndex(where: { !Self.isWhitespace($0) }), view[close] == UInt8(ascii: "}")
        else { return }  // null: the children went away meanwhile
        guard members.isArray else {
            // The server's text between the braces is the members, in key order: copy it as it is.
            let inner = answer.getSlice(at: open + 1, length: close - open - 1) ?? ByteBuffer()
            guard inner.readableBytes > 0 else { return }
            try members.beginRun(output: output)
            try output.write(inner)
            return
        }
        try answer.withUnsafeReadableBytes { (raw) throws(CLIError) in
            let reader = JSONStreamReader(bytes: raw)
            do {
                try reader.enterObject()
                var first = true
                while let key = try reader.nextKey(first: first) {
                    first = false
                    let value = try reader.skipValue()
                    try members.begin(key, output: output)
                    try output.write(reader.text(value))
                }
            } catch {
                throw .failed("the server's answer is not JSON: \(error)")
            }
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    // MARK: Requests

    /// A page of keys, and whether it holds as many as were asked for (more may follow).
    private struct Page {
        var keys: [String]
        var isFull: Bool
    }

    /// The keys after `after`, a page at a time; `nil` when the location is not an object (a query
    /// on a leaf answers `null`).
    private func list(_ path: Path, after: String?) async throws(CLIError) -> Page? {
        while true {
            let size = pageSize
            var parameters = [("shallow", "true"), ("orderBy", #""$key""#), ("limitToFirst", String(size))]
            if let after { parameters.append(("startAfter", JSONPrinter.quoted(after))) }
            requests += 1
            guard let answer = try await rest.fetch(.GET, .data(path), parameters: parameters, limit: budget) else {
                // Only keys come back, so this takes keys near the 768-byte limit and a small budget.
                pageSize = max(1, size / 4)
                continue
            }
            let keys = try answer.withUnsafeReadableBytes { (raw) throws(CLIError) -> [String]? in
                let reader = JSONStreamReader(bytes: raw)
                do {
                    guard try reader.peekValue() == .object else { return nil }
                    try reader.enterObject()
                    var keys: [String] = []
                    var first = true
                    while let key = try reader.nextKey(first: first) {
                        first = false
                        _ = try reader.skipValue()
                        keys.append(key)
                    }
                    return keys
                } catch {
                    throw .failed("the server's answer to a listing of \(path) is not JSON: \(error)")
                }
            }
            guard let keys else { return nil }
            let averageKey = max(8, answer.readableBytes / max(1, keys.count))
            pageSize = max(1, min(1000, 65536 / averageKey))
            return Page(keys: keys, isFull: keys.count >= size)
        }
    }

    /// The children `from`…`to` (inclusive, in key order), or `nil` when they are over the budget.
    private func fetchRange(_ path: Path, from: String, to: String) async throws(CLIError) -> ByteBuffer? {
        let parameters = [
            ("orderBy", #""$key""#), ("startAt", JSONPrinter.quoted(from)), ("endAt", JSONPrinter.quoted(to)),
        ]
        requests += 1
        return try await rest.fetch(.GET, .data(path), parameters: parameters, limit: budget)
    }

    /// Streams the value at `path` (a leaf, or nothing) to the output.
    private func stream(_ path: Path) async throws(CLIError) {
        requests += 1
        let response = try await rest.send(.GET, .data(path), parameters: [("shallow", "true")])
        do {
            for try await chunk in response.body {
                try output.write(chunk)
                progress.update(output.count)
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw RESTClient.unreachable(error, base: rest.base, what: "GET \(path)", timeout: rest.timeout)
        }
    }

    // MARK: Arrays

    /// Whether the object at `path` is written as an array by a plain `GET`: all its keys are array
    /// indexes (`0`, or digits without a leading zero) and more than half of `0…max` are present.
    private func isArrayLike(_ path: Path, firstPage: Page) async throws(CLIError) -> Bool {
        var count = 0
        var maxIndex = -1
        var page = firstPage
        while true {
            for key in page.keys {
                guard let index = Self.arrayIndex(key) else { return false }
                count += 1
                maxIndex = max(maxIndex, index)
            }
            guard page.isFull, let last = page.keys.last, let next = try await list(path, after: last) else { break }
            page = next
        }
        return count > 0 && maxIndex < 2 * count
    }

    /// The index a key names in array output (`0`, or up to 9 digits without a leading zero).
    static func arrayIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 9, first != UInt8(ascii: "0") || utf8.count == 1 else {
            return nil
        }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// What the object children of one location measured so far, to fetch as many per request as fit.
struct ChildSizes {
    private var bytes = 0
    private var children = 0
    /// The most children per request since a request was over the budget; grows back on success.
    private var cap = Int.max

    /// How many children are expected to fit in `budget` bytes: 0 until one was measured.
    func fitting(in budget: Int) -> Int {
        guard children > 0 else { return 0 }
        let average = max(1, bytes / children)
        return min(cap, 2000, max(1, budget / average))
    }

    mutating func record(bytes: Int, children: Int) {
        self.bytes += bytes
        self.children += children
        if cap != Int.max { cap *= 2 }
    }

    /// Records that a request for `count` children was over the budget.
    mutating func overflowed(_ count: Int) { cap = max(1, count / 8) }
}

/// Writes the separators between members of an object (`,"key":`) or elements of an array (`,`,
/// with `null` for missing indexes).
struct MemberWriter {
    let isArray: Bool
    private var written = 0
    private var nextIndex = 0

    init(isArray: Bool) { self.isArray = isArray }

    /// Writes what comes before the value of child `key`.
    mutating func begin(_ key: String, output: OutputFile) throws(CLIError) {
        if isArray, let index = Exporter.arrayIndex(key) {
            while nextIndex < index {
                try separate(output)
                try output.write("null")
                nextIndex += 1
            }
            try separate(output)
            nextIndex = index + 1
        } else {
            try separate(output)
            try output.write(JSONPrinter.quoted(key))
            try output.write(byte: UInt8(ascii: ":"))
        }
    }

    /// Writes what comes before a run of whole members copied from the server (objects only).
    mutating func beginRun(output: OutputFile) throws(CLIError) { try separate(output) }

    private mutating func separate(_ output: OutputFile) throws(CLIError) {
        if written > 0 { try output.write(byte: UInt8(ascii: ",")) }
        written += 1
    }
}
