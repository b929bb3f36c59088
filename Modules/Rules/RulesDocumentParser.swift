import Tree

/// Builds the compiled rules tree of a document, refusing what Firebase refuses.
struct RulesDocumentParser {
    private let reader: DocumentReader

    /// The compiled root location of the document `text`.
    static func parse(_ text: String) throws(RulesError) -> RuleLocation {
        var reader = DocumentReader(text: text)
        let document = try reader.readDocument()
        return try RulesDocumentParser(reader: reader).root(document)
    }

    private init(reader: DocumentReader) {
        self.reader = reader
    }

    private func root(_ document: DocumentValue) throws(RulesError) -> RuleLocation {
        guard case .object(let members) = document.content else {
            throw documentError(
                "a rules document is an object with a \"rules\" member, not \(document.kindDescription)",
                at: document.start)
        }
        var rules: DocumentValue?
        for member in members {
            guard member.key == "rules" else {
                throw documentError(
                    "unknown member \"\(member.key)\" (a rules document has only \"rules\")", at: member.keyStart)
            }
            guard rules == nil else { throw documentError("duplicate member \"rules\"", at: member.keyStart) }
            rules = member.value
        }
        guard let rules else { throw documentError("a rules document needs a \"rules\" member", at: document.start) }
        return try location(rules, path: "/", captures: [])
    }

    /// The location described by `value`, at `path` in the rules, below the wildcards `captures`
    /// (by depth, `nil` for named keys).
    private func location(
        _ value: DocumentValue, path: String, captures: [String?]
    ) throws(RulesError) -> RuleLocation {
        guard case .object(let members) = value.content else {
            throw documentError("\(path) must be an object of rules, not \(value.kindDescription)", at: value.start)
        }
        var seen: Set<String> = []
        var rules: [RuleKind: CompiledRule] = [:]
        var indexOn: [String] = []
        var children: [ChildKey: RuleLocation] = [:]
        var wildcard: (name: String, location: RuleLocation)?
        for member in members {
            let key = member.key
            guard seen.insert(key).inserted else {
                throw documentError("duplicate member \"\(key)\"", at: member.keyStart)
            }
            if let kind = RuleKind.allCases.first(where: { $0.key == key }) {
                rules[kind] = try rule(kind, member.value, path: path, captures: captures)
            } else if key == ".indexOn" {
                indexOn = try indexes(member.value, path: path)
            } else if key.hasPrefix(".") {
                throw documentError(
                    "unknown rule \"\(key)\" at \(path) (known: .read, .write, .validate, .indexOn)",
                    at: member.keyStart)
            } else if key.hasPrefix("$") {
                let name = String(key.dropFirst())
                if let problem = name.isEmpty ? "is empty" : ChildKey.problem(with: name) {
                    throw documentError("invalid wildcard \"\(key)\": its name \(problem)", at: member.keyStart)
                }
                if let existing = wildcard {
                    throw documentError(
                        "\(path) has two wildcard children, $\(existing.name) and \(key) (at most one is allowed)",
                        at: member.keyStart)
                }
                if captures.contains(name) {
                    throw documentError("\(key) is already a wildcard above \(path)", at: member.keyStart)
                }
                let child = try location(member.value, path: Self.path(path, key), captures: captures + [name])
                wildcard = (name, child)
            } else {
                if let problem = ChildKey.problem(with: key) {
                    throw documentError("invalid child \"\(key)\" at \(path): the key \(problem)", at: member.keyStart)
                }
                children[ChildKey(key)] = try location(
                    member.value, path: Self.path(path, key), captures: captures + [nil])
            }
        }
        return RuleLocation(
            read: rules[.read], write: rules[.write], validate: rules[.validate], indexOn: indexOn,
            children: children, wildcard: wildcard?.location)
    }

    private static func path(_ parent: String, _ key: String) -> String {
        parent == "/" ? "/" + key : parent + "/" + key
    }

    private func rule(
        _ kind: RuleKind, _ value: DocumentValue, path: String, captures: [String?]
    ) throws(RulesError) -> CompiledRule {
        let name = Self.path(path, kind.key)
        switch value.content {
        case .bool(let constant):
            return CompiledRule(
                kind: kind, rulePath: path, source: String(constant), expression: .constant(.bool(constant)))
        case .string(let text):
            do {
                let expression = try ExpressionCompiler(kind: kind, captures: captures).compileRule(text)
                return CompiledRule(kind: kind, rulePath: path, source: text, expression: expression)
            } catch {
                let offset = reader.offset(ofDecoded: error.offset, inStringAt: value.start)
                let (line, column) = reader.location(of: offset)
                throw .invalidExpression(line: line, column: column, reason: "\(name): \(error.reason)")
            }
        default:
            throw documentError(
                "\(name) must be a boolean or a string holding an expression, not \(value.kindDescription)",
                at: value.start)
        }
    }

    private func indexes(_ value: DocumentValue, path: String) throws(RulesError) -> [String] {
        let reason = "\(Self.path(path, ".indexOn")) must be a string or an array of strings"
        switch value.content {
        case .string(let single):
            return [single]
        case .array(let elements):
            var names: [String] = []
            for element in elements {
                guard case .string(let name) = element.content else {
                    throw documentError("\(reason), not an array holding \(element.kindDescription)", at: element.start)
                }
                names.append(name)
            }
            return names
        default:
            throw documentError("\(reason), not \(value.kindDescription)", at: value.start)
        }
    }

    private func documentError(_ reason: String, at offset: Int) -> RulesError {
        let (line, column) = reader.location(of: offset)
        return .invalidDocument(line: line, column: column, reason: reason)
    }
}
