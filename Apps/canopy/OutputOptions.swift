import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How values are printed: pretty and coloured on a terminal, compact when piped or with `--json`.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print compact JSON, also on a terminal (the default when stdout is not a terminal).")
    var json = false

    /// Whether output is for people: stdout is a terminal and `--json` was not given.
    var isPretty: Bool { !json && isatty(STDOUT_FILENO) == 1 }

    var printer: JSONPrinter { JSONPrinter(pretty: isPretty, colour: isPretty && Self.coloursAllowed) }

    /// Colours are off with `NO_COLOR` set (https://no-color.org) or `TERM=dumb`.
    static var coloursAllowed: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
    }
}
