import Foundation
import Query
import SyncEngine
import Synchronization
import Tree

/// Runs one case of `syncPointSpec.json` against a ``SyncTree`` and reports the first mismatch.
struct SyncPointSpecRunner {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Records the listens the sync tree asks for.
    final class RecordingListenProvider: ListenProvider {
        let listens = Mutex<[String: Int?]>([:])

        func startListening(_ query: QuerySpec, tag: Int?) {
            listens.withLock { $0[query.description] = tag }
        }

        func stopListening(_ query: QuerySpec, tag: Int?) {
            _ = listens.withLock { $0.removeValue(forKey: query.description) }
        }
    }

    let name: String
    let steps: [JSONValue]
    /// Every location of the case is placed below this one.
    let prefix: Path

    func run() throws {
        var tree = SyncTree(listenProvider: RecordingListenProvider())
        var nextWriteID = 0
        var nextRegistrationID = 1
        var tagsBySpecTag: [Int: Int] = [:]
        var registrationsByCallback: [Int: EventRegistration] = [:]
        let allTypes = Set(EventType.allCases)

        for (offset, step) in steps.enumerated() {
            guard case .string(let type)? = step["type"] else { throw failure(offset, "step without type") }
            let path = prefix.child(Path(step["path"]?.stringValue ?? ""))
            let events: [Event]
            switch type {
            case "listen":
                let query = QuerySpec(path: path, params: try Self.params(step["params"]))
                let registration = EventRegistration(id: nextRegistrationID, types: allTypes)
                nextRegistrationID += 1
                if case .number(let callback)? = step["callbackId"] {
                    registrationsByCallback[Int(callback)] = registration
                }
                events = tree.addRegistration(registration, for: query)
                // Orderings without range or limit share the plain listen and get no tag.
                if case .number(let specTag)? = step["params"]?["tag"], let tag = tree.tag(for: query) {
                    tagsBySpecTag[Int(specTag)] = tag
                }
            case "unlisten":
                let query = QuerySpec(path: path, params: try Self.params(step["params"]))
                var registration: EventRegistration?
                if case .number(let callback)? = step["callbackId"] {
                    registration = registrationsByCallback[Int(callback)]
                }
                events = tree.removeRegistration(registration, for: query)
            case "serverUpdate":
                let node = try Node(json: step["data"] ?? .null)
                if case .number(let specTag)? = step["tag"] {
                    events = tree.applyTaggedOverwrite(node, at: path, tag: tagsBySpecTag[Int(specTag)] ?? -1)
                } else {
                    events = tree.applyServerOverwrite(node, at: path)
                }
            case "serverMerge":
                let children = try Self.children(step["data"])
                if case .number(let specTag)? = step["tag"] {
                    events = tree.applyTaggedMerge(children, at: path, tag: tagsBySpecTag[Int(specTag)] ?? -1)
                } else {
                    events = tree.applyServerMerge(children, at: path)
                }
            case "set":
                let node = try Node(json: step["data"] ?? .null)
                let visible = step["visible"]?.boolValue ?? true
                events = tree.applyUserOverwrite(node, at: path, writeID: nextWriteID, visible: visible)
                nextWriteID += 1
            case "update":
                events = tree.applyUserMerge(try Self.children(step["data"]), at: path, writeID: nextWriteID)
                nextWriteID += 1
            case "ackUserWrite":
                guard case .number(let writeID)? = step["writeId"] else { throw failure(offset, "ack without writeId") }
                events = tree.ackUserWrite(writeID: Int(writeID), revert: step["revert"]?.boolValue ?? false)
            case "suppressWarning":
                continue
            default:
                throw failure(offset, "unknown step type \(type)")
            }
            try compare(expected: step["events"], actual: events, step: offset)
        }
    }

    private func failure(_ step: Int, _ message: String) -> Failure {
        Failure(description: "\(name) [step \(step)\(prefix.isEmpty ? "" : " under \(prefix)")]: \(message)")
    }

    /// Events must match one for one. Like the official harnesses, the spec's list is matched as a
    /// set (some cases list events in an order no client raises them in), and each listener's
    /// events must come in type order: removed, added, moved, changed, value.
    private func compare(expected: JSONValue?, actual: [Event], step: Int) throws {
        guard case .array(let expectedEvents)? = expected else { throw failure(step, "step without events") }
        let rendered = actual.map(describe)
        guard expectedEvents.count == actual.count else {
            let expectedText = expectedEvents.map { $0.serialized() }
            throw failure(
                step, "expected \(expectedEvents.count) events \(expectedText), got \(actual.count): \(rendered)")
        }
        var lastRank: [Int: Int] = [:]
        for event in actual {
            guard case .data(let registration, _, let change) = event else { continue }
            let rank = Self.eventOrder.firstIndex(of: change.type) ?? 0
            if let last = lastRank[registration.id], last > rank {
                throw failure(step, "listener \(registration.id) got \(change.type.rawValue) too late: \(rendered)")
            }
            lastRank[registration.id] = rank
        }
        var unmatched = actual
        for expectedEvent in expectedEvents {
            let expectedNode = try Node(json: expectedEvent["data"] ?? .null)
            guard let index = unmatched.firstIndex(where: { matches($0, expectedEvent, expectedNode) }) else {
                throw failure(step, "no event matches \(expectedEvent.serialized()); got \(rendered)")
            }
            unmatched.remove(at: index)
        }
    }

    static let eventOrder: [EventType] = [.childRemoved, .childAdded, .childMoved, .childChanged, .value]

    private func matches(_ event: Event, _ expected: JSONValue, _ expectedNode: Node) -> Bool {
        guard case .data(_, let eventPath, let change) = event else { return false }
        let queryPath = change.childName == nil ? eventPath : (eventPath.parent ?? .root)
        guard queryPath == prefix.child(Path(expected["path"]?.stringValue ?? "")),
            change.type.rawValue == expected["type"]?.stringValue
        else { return false }
        if change.type != .value, change.childName?.string != expected["name"]?.stringValue { return false }
        if let prevName = expected["prevName"], change.prevName?.string != prevName.stringValue { return false }
        return change.node == expectedNode
    }

    private func describe(_ event: Event) -> String {
        guard case .data(_, let path, let change) = event else { return event.description }
        var text = "\(change.type.rawValue) \(path)"
        if let prevName = change.prevName { text += " prev=\(prevName)" }
        return text + " \(change.node)"
    }

    static func children(_ data: JSONValue?) throws -> [Path: Node] {
        guard case .object(let members)? = data else { return [:] }
        var children: [Path: Node] = [:]
        for (key, value) in members { children[Path(key)] = try Node(json: value) }
        return children
    }

    /// Query parameters in the spec's notation.
    static func params(_ json: JSONValue?) throws -> QueryParams {
        guard case .object(let spec)? = json else { return .default }
        var params = QueryParams()
        if case .string(let child)? = spec["orderBy"] { params.index = .child(Path(child)) }
        if spec["orderByKey"]?.boolValue == true { params.index = .key }
        if spec["orderByPriority"]?.boolValue == true { params.index = .priority }
        if spec["orderByValue"]?.boolValue == true { params.index = .value }
        let isKeyIndex = params.index == .key
        func bound(_ name: String, inclusive: Bool, openName: ChildKey) throws -> QueryParams.Bound? {
            guard case .object(let bound)? = spec[name] else { return nil }
            let value = try Node(json: bound["index"] ?? .null)
            var key = bound["name"]?.stringValue.map { ChildKey($0) }
            if !inclusive, !isKeyIndex, key == nil { key = openName }
            return QueryParams.Bound(value: value, name: key, inclusive: inclusive)
        }
        params.start = try bound("startAt", inclusive: true, openName: .min)
        if let after = try bound("startAfter", inclusive: false, openName: .max) { params.start = after }
        params.end = try bound("endAt", inclusive: true, openName: .max)
        if let before = try bound("endBefore", inclusive: false, openName: .min) { params.end = before }
        if let equal = try bound("equalTo", inclusive: true, openName: .min) {
            params.start = equal
            params.end = equal
        }
        if case .number(let limit)? = spec["limitToFirst"] { params.limit = .first(Int(limit)) }
        if case .number(let limit)? = spec["limitToLast"] { params.limit = .last(Int(limit)) }
        return params
    }
}
