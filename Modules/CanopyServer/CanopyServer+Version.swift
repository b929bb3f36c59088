extension CanopyServer {
    /// The release of Canopy this server is (`canopy-server --version`).
    public static let version = "0.1.0"
}
