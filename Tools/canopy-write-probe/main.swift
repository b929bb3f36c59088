// A client that tests kill in the middle of its write queue: it makes writes with persistence on,
// reports each one saved on the device, and, run again, sends what the last run left.
//
// usage: canopy-write-probe <database-url> <persistence-folder> <first-index> <count>
//            [--transactions [--offline]]
//
// Each write is one update, {"counter": increment(1), "log/<index>": true}, so a write applied
// twice shows as a counter above the number of log entries. Prints "durable <index>" once a write
// is saved, then "acknowledged <n>" once the server acknowledged every pending write (restored
// ones included), and exits.
//
// With --transactions, each is instead a transaction named "log" at `tx` that adds 1 to
// `tx/counter` and sets `tx/log/i<index>`; the probe prints "saved <index>" once it is kept on the
// device (and "committed <index>" when the server took it), then runs until it is killed, so that
// transactions restored from the last run can finish. --offline keeps it from connecting.

import Canopy
import Foundation

/// Writes a line to standard output at once (no buffering: the process may be killed any time).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
let options = Set(arguments.dropFirst(5))
guard arguments.count >= 5, let first = Int(arguments[3]), let count = Int(arguments[4]),
    options.isSubset(of: ["--transactions", "--offline"])
else {
    FileHandle.standardError.write(
        Data(
            """
            usage: canopy-write-probe <database-url> <persistence-folder> <first-index> <count> \
            [--transactions [--offline]]

            """.utf8))
    exit(2)
}
let database = Database.database(url: arguments[1])
database.persistenceDirectory = URL(fileURLWithPath: arguments[2])
database.isPersistenceEnabled = true

if options.contains("--transactions") {
    database.registerTransaction(named: "log") { data, index in
        var tx = data.value as? [String: Any] ?? [:]
        var log = tx["log"] as? [String: Any] ?? [:]
        log["i\(index ?? "?")"] = true
        tx["log"] = log
        tx["counter"] = (tx["counter"] as? Int ?? 0) + 1
        data.value = tx
        return .success(withValue: data)
    }
    // The database starts on first use: then transactions kept from the last run resume.
    if options.contains("--offline") { database.goOffline() } else { database.goOnline() }
    let tx = database.reference(withPath: "tx")
    // In batches, so that each put carries many transactions and more queue behind it.
    for batch in stride(from: first, to: first + count, by: 20) {
        let indexes = batch..<min(batch + 20, first + count)
        for index in indexes {
            tx.runTransaction(named: "log", argument: index) { _, committed, _ in
                if committed { say("committed \(index)") }
            }
        }
        // Reading the size waits for what was queued for the store before it.
        _ = database.persistenceSize
        for index in indexes { say("saved \(index)") }
        try await Task.sleep(for: .milliseconds(5))
    }
    say("queued")
    while true { try await Task.sleep(for: .seconds(60)) }
}

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
