import Foundation
import ProcessResources

/// The machine a run happened on, printed with its figures: on a shared 2-core VM the load average
/// says as much about a figure as the figure itself.
struct MachineInfo: Encodable {
    var cores: Int
    var cpuModel: String
    /// The 1-minute load average when the run started.
    var loadAverage: Double?
    var fileLimit: UInt64

    static func current() -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let loadavg = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first
        return MachineInfo(
            cores: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model ?? "unknown",
            loadAverage: loadavg.flatMap { Double($0) }, fileLimit: FileLimit.current.soft)
    }

    var describe: String {
        "machine: \(cores) cores, \(cpuModel), load average \(loadAverage.map { String(format: "%.2f", $0) } ?? "?"), "
            + "open-file limit \(fileLimit)"
    }
}
