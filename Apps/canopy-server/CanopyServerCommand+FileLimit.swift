import Logging
import ProcessResources

extension CanopyServerCommand {
    /// Every connection holds a file descriptor: raises the soft open-file limit to the hard limit
    /// and logs the limit in force, with what to run when it could not be raised or stays low.
    static func raiseFileLimit(logger: Logger) {
        let before = FileLimit.current
        let soft = FileLimit.raiseToHardLimit()
        let hard = FileLimit.current.hard
        let facts: Logger.Metadata = ["soft": "\(soft)", "hard": "\(hard)", "was": "\(before.soft)"]
        if soft < hard {
            let advice = "run `ulimit -n \(hard)` before starting canopy-server"
            logger.warning(
                "open-file limit \(soft) (each connection holds one) could not be raised to the hard limit \(hard): \(advice)",
                metadata: facts)
        } else if hard < 100_000 {
            let advice = "as root `ulimit -Hn 1048576`, or LimitNOFILE= in a systemd unit, before starting"
            logger.info(
                "open-file limit \(soft): at most that many connections; for more, raise the hard limit (\(advice))",
                metadata: facts)
        } else {
            logger.info("open-file limit \(soft)", metadata: facts)
        }
    }
}
