import Tree

/// The locations a write replaces and their values, none inside another: one for a set, several
/// for a multi-path update, none for a read. A set's single part needs no array.
struct WriteParts: RandomAccessCollection {
    private enum Storage {
        case none
        case one(Path, Node)
        case many([(Path, Node)])
    }

    private let storage: Storage

    static let none = WriteParts(storage: .none)

    private init(storage: Storage) {
        self.storage = storage
    }

    init(_ path: Path, _ value: Node) {
        storage = .one(path, value)
    }

    init(_ parts: [(Path, Node)]) {
        storage = parts.count == 1 ? .one(parts[0].0, parts[0].1) : .many(parts)
    }

    var startIndex: Int { 0 }

    var endIndex: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let parts): parts.count
        }
    }

    subscript(position: Int) -> (path: Path, value: Node) {
        switch storage {
        case .none: preconditionFailure("a read writes nothing")
        case .one(let path, let value): (path, value)
        case .many(let parts): parts[position]
        }
    }
}
