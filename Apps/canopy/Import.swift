import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Tree

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `canopy import PATH FILE`: writes a JSON file of any size at a path, in pieces.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write a JSON file of any size at a path, streaming it in pieces.",
        discussion: """
            The file is read as a stream (memory stays flat whatever its size) and written in requests \
            of at most --chunk-size bytes: the server refuses request bodies over 16 MB. A file is \
            first read through once to check it, so invalid JSON, keys the database cannot store \
            (containing . $ # [ ] / or control characters, empty, over 768 bytes), nesting over 32 levels, \
            strings over 10 MB and numbers out of range stop the import before anything is written; the \
            message names the key or value and its line. (Stdin, -, is read once: it is checked as it is \
            written.)

            Without --merge the value at PATH is replaced: the first write replaces it, the next ones add \
            to it. With --merge the file must hold an object (or array) whose children each replace the \
            child of the same key, other children of PATH are kept. Arrays are stored as Firebase stores \
            them: objects keyed 0, 1, 2…, null elements left out. The import is not atomic: readers may \
            see it part-way, and an import that fails part-way leaves what it wrote.

            On a terminal, stderr shows the progress: bytes, rate and time left.

            Examples:
              canopy import backup dump.json
              canopy import / dump.json --token owner
              canopy import users new-users.json --merge
              gunzip -c dump.json.gz | canopy import backup -
            """)

    @Argument(help: "Where to write, such as backup (/ is the root).")
    var path: String

    @Argument(help: "The JSON file, or - for stdin.")
    var file: String

    @Flag(help: "Write the file's top-level children into PATH, keeping the others.")
    var merge = false

    @Option(help: "Largest request body, in bytes (at most 8 MB; a longer single value goes in a request of its own).")
    var chunkSize = 4 * 1024 * 1024

    @OptionGroup(title: "Server")
    var connection: ConnectionOptions

    func validate() throws {
        guard (1024...8 * 1024 * 1024).contains(chunkSize) else {
            throw ValidationError("--chunk-size must be between 1024 and 8388608 bytes")
        }
    }

    func run() async throws {
        let location = try Path.writableArgument(path)
        let input = try InputFile(path: file)
        let progress = Progress("Importing", total: input.size)
        let reader = JSONStreamReader(input: input, maxTokenBytes: Self.maxTokenBytes)
        reader.onRead = { progress.update($0) }
        let (writes, bytes) = try await connection.withREST { rest in
            // Is the server there? Asked while the file is checked; a server that is not there, or
            // refuses, stops the check.
            let refused = Atomic(false)
            async let reached: Void = {
                do {
                    _ = try await rest.answer(
                        .GET, .data(location), parameters: [("shallow", "true"), ("print", "silent")])
                } catch {
                    refused.store(true, ordering: .relaxed)
                    throw error
                }
            }()
            if input.size != nil {
                try await check(input, at: location, unless: { refused.load(ordering: .relaxed) })
                guard lseek(input.descriptor, 0, SEEK_SET) == 0 else {
                    throw CLIError.unreadableInput(
                        "cannot read \(input.name) again: \(String(cString: strerror(errno)))")
                }
            }
            try await reached
            var chunker = ImportChunker(reader: reader, basePath: location, chunkBytes: chunkSize, merge: merge)
            return try await Self.send(&chunker, to: rest, at: location, file: input.name, progress: progress)
        }
        progress.update(reader.offset)
        progress.finish(
            "Imported \(ByteCount(reader.offset)) into \(location) in \(Progress.elapsed(progress.elapsed)) "
                + "(\(progress.rate); \(writes) writes, \(ByteCount(bytes)) of compact JSON)")
    }

    /// The longest string token read: a 10 MB string, escaped.
    static let maxTokenBytes = 64 << 20

    /// Reads the whole file once, checking it without writing; stops early once `stopped` is true.
    ///
    /// It gives way to other tasks every few thousand values: with one core, the question to the
    /// server (whose failure sets `stopped`) gets its turn only so.
    private func check(_ input: InputFile, at location: Path, unless stopped: () -> Bool) async throws(CLIError) {
        let progress = Progress("Checking", total: input.size)
        defer { progress.finish(nil) }
        let reader = JSONStreamReader(input: input, maxTokenBytes: Self.maxTokenBytes)
        reader.onRead = { progress.update($0) }
        var checker = ImportChunker(
            reader: reader, basePath: location, chunkBytes: chunkSize, merge: merge, emit: false)
        do {
            while try !checker.check(pausingWhen: { true }), !stopped() { await Task.yield() }
        } catch {
            throw .invalidInput("\(input.name): \(error); nothing was written")
        }
    }

    /// Sends the chunker's writes in order; returns the number of writes and the bytes sent.
    ///
    /// Updates of distinct children of one location (a wide node's members) are independent, so up
    /// to ``window`` of them are in flight at once: the server parses and applies one while it
    /// stores the one before. Any other write waits until everything before it was answered.
    private static func send(
        _ chunker: inout ImportChunker, to rest: RESTClient, at location: Path, file: String, progress: Progress
    ) async throws(CLIError) -> (Int, Int) {
        var inFlight: [(write: ImportChunker.Write, task: Task<Void, any Error>)] = []
        /// Writes the server acknowledged, and their bytes.
        var writes = 0
        var bytes = 0
        func settleFirst() async throws(CLIError) {
            let task = inFlight.removeFirst().task
            do {
                try await task.value
                writes += 1
            } catch let error as CLIError {
                throw error
            } catch {
                throw .failed("\(error)")
            }
        }
        do throws(CLIError) {
            while true {
                let write: ImportChunker.Write?
                do {
                    write = try chunker.next()
                } catch {
                    throw CLIError.invalidInput("\(file): \(error)")
                }
                guard let write else { break }
                while !inFlight.isEmpty,
                    inFlight.count >= Self.window || !inFlight.allSatisfy({ write.isIndependent(of: $0.write) })
                {
                    try await settleFirst()
                }
                bytes += write.body.readableBytes
                inFlight.append((write, Task { try await Self.perform(write, rest: rest, at: location) }))
            }
            while !inFlight.isEmpty { try await settleFirst() }
        } catch {
            progress.finish(nil)
            // Writes in flight when the file turned out bad, or one failed, are let finish, to say
            // what was written.
            for (_, task) in inFlight where (try? await task.value) != nil { writes += 1 }
            let written = writes == 0 ? "nothing was written" : "\(location) holds part of the file"
            throw error.adding("the import stopped, \(written)")
        }
        return (writes, bytes)
    }

    /// The most writes in flight at once (see ``send(_:to:at:file:progress:)``).
    static let window = 3

    private static func perform(_ write: ImportChunker.Write, rest: RESTClient, at location: Path) async throws {
        let body = write.body
        switch write {
        case .put:
            _ = try await rest.answer(.PUT, .data(location), parameters: [("print", "silent")], body: body)
        case .patch(let keys, _, _):
            let target = location.child(Path(keys: keys.map { ChildKey($0) }))
            _ = try await rest.answer(.PATCH, .data(target), parameters: [("print", "silent")], body: body)
        }
    }
}
