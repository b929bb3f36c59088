// A client that tests kill in the middle of its write queue: it makes writes with persistence on,
// reports each one saved on the device, and, run again, sends what the last run left.
//
// usage: canopy-write-probe <database-url> <persistence-folder> <first-index> <count>
//
// Each write is one update, {"counter": increment(1), "log/<index>": true}, so a write applied
// twice shows as a counter above the number of log entries. Prints "durable <index>" once a write
// is saved, then "acknowledged <n>" once the server acknowledged every pending write (restored
// ones included), and exits.

import Canopy
import Foundation

/// Writes a line to standard output at once (no buffering: the process may be killed any time).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let first = Int(arguments[3]), let count = Int(arguments[4]) else {
    FileHandle.standardError.write(
        Data("usage: canopy-write-probe <database-url> <persistence-folder> <first-index> <count>\n".utf8))
    exit(2)
}
let database = Database.database(url: arguments[1])
database.persistenceDirectory = URL(fileURLWithPath: arguments[2])
database.isPersistenceEnabled = true

let root = database.reference()
for index in first..<(first + count) {
    let write = root.updateChildValues(["counter": ServerValue.increment(1), "log/\(index)": true])
    Task.detached {
        if await write.isDurable { say("durable \(index)") }
    }
    try await Task.sleep(for: .milliseconds(2))
}
var acknowledged = 0
for write in database.pendingWrites {
    do {
        try await write.acknowledged
        acknowledged += 1
    } catch {
        say("refused \(write.path): \(error)")
    }
}
say("acknowledged \(acknowledged)")
exit(0)
