/// A scenario's figures: lines for people, and the `--json` object.
protocol ScenarioReport: Encodable {
    func describe() -> [String]
}
