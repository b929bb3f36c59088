import Tree

extension Path {
    /// A location given on the command line (`users/ada`, `/` for the root), checked as the
    /// database checks paths.
    static func argument(_ text: String) throws(CLIError) -> Path {
        do {
            return try Path(validating: text)
        } catch {
            throw .invalidInput("\(error)")
        }
    }

    /// A location that may be written (not under `.info`).
    static func writableArgument(_ text: String) throws(CLIError) -> Path {
        let path = try argument(text)
        do {
            try path.checkWritable()
        } catch {
            throw .invalidInput("cannot write \(path): \(error)")
        }
        return path
    }
}
