import Foundation
import Testing

@testable import ProcessResources

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What canopy-load, the benchmarks and the tests read of a process: its CPU time, its memory and
/// its open files, parsed from `/proc` as Linux writes it.
struct ProcessReadingTests {
    /// No process has this id: Linux's pid_max is at most 2^22.
    static let absentPid = Int32.max

    static let hasProc = FileManager.default.fileExists(atPath: "/proc/self/stat")

    @Test func cpuTicksAreCountedAfterACommandNameHoldingSpacesAndParentheses() {
        let stat = "4242 (canopy (x) y) R 1 4242 4242 0 -1 4194560 812 0 0 0 150 25 0 0 20 0 9 0 1234 0 0"
        #expect(ProcessCPU.clockTicks(stat: stat) == 175)
        #expect(ProcessCPU.clockTicks(stat: "4242 (cut short) R 1 2") == nil)
    }

    @Test func memoryIsReadInBytesFromTheStatusLines() {
        let status = """
            Name:\tcanopy-server
            VmHWM:\t   20480 kB
            VmRSS:\t   10240 kB
            RssAnon:\t    4096 kB
            RssFile:\t    6144 kB
            """
        #expect(
            ProcessMemory(status: status)
                == ProcessMemory(residentBytes: 10 << 20, peakResidentBytes: 20 << 20, anonymousBytes: 4 << 20))
        // A process that exited and was not reaped yet has no memory lines.
        #expect(ProcessMemory(status: "Name:\tcanopy-server\nState:\tZ (zombie)") == nil)
    }

    @Test(.enabled(if: hasProc, "reads /proc"))
    func thisProcessHasResidentMemoryAndCPUTime() throws {
        let memory = try ProcessMemory.read()
        #expect(memory.residentBytes > 0)
        #expect(memory.peakResidentBytes >= memory.residentBytes)
        #expect(try ProcessMemory.residentBytes(of: getpid()) > 0)
        #expect(ProcessCPU.seconds(of: getpid()) != nil)
    }

    @Test(.enabled(if: hasProc, "reads /proc"))
    func aProcessThatIsGoneCannotBeRead() {
        #expect(
            throws: ProcessResourceError.unreadable(
                what: "the memory of process \(Self.absentPid)", path: "/proc/\(Self.absentPid)/status")
        ) {
            try ProcessMemory.read(pid: Self.absentPid)
        }
        #expect(ProcessCPU.seconds(of: Self.absentPid) == nil)
        #expect(throws: ProcessResourceError.self) { try PeakMemorySampler(pid: Self.absentPid) }
    }

    @Test(.enabled(if: hasProc, "reads /proc"))
    func openFilesListWhatThisProcessHoldsUnderAFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("open-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/held.txt"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(OpenFiles.paths(under: folder) == [])
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let held = OpenFiles.paths(under: folder)
        #expect(held.count == 1 && held.first?.hasSuffix("/held.txt") == true, "\(held)")
        try handle.close()
        #expect(OpenFiles.paths(under: folder) == [])
    }

    @Test func theSoftFileLimitIsRaisedAndNeverLowered() {
        let before = FileLimit.current.soft
        let soft = FileLimit.raiseToHardLimit()
        #expect(soft >= before && soft == FileLimit.current.soft)
        #expect(FileLimit.raise(toAtLeast: soft / 2) == soft)
        #if os(Linux)
        // Linux bounds the hard limit (fs.nr_open), and the soft one may rise to it.
        #expect(soft == FileLimit.current.hard)
        #endif
    }
}
