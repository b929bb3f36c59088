/// The methods of RuleDataSnapshot, by name.
enum SnapshotMethodName: String {
    case val, child, parent, hasChild, hasChildren, exists, getPriority, isNumber, isString, isBoolean

    var returnType: StaticType {
        switch self {
        case .val: .primitive
        case .getPriority: [.null, .number, .string]
        case .child, .parent: .snapshot
        case .hasChild, .hasChildren, .exists, .isNumber, .isString, .isBoolean: .boolean
        }
    }
}

/// The methods of strings, by name.
enum StringMethodName: String {
    case contains, beginsWith, endsWith, replace, toLowerCase, toUpperCase, matches

    var returnType: StaticType {
        switch self {
        case .contains, .beginsWith, .endsWith, .matches: .boolean
        case .replace, .toLowerCase, .toUpperCase: .string
        }
    }
}

/// The methods of `root`, `data` and `newData`, with their compiled arguments.
enum SnapshotMethod: Sendable {
    case val
    case child(CompiledExpression)
    case parent
    case hasChild(CompiledExpression)
    /// `hasChildren()` (any child) or `hasChildren([keys])` (every one of them).
    case hasChildren([CompiledExpression]?)
    case exists
    case getPriority
    case isNumber
    case isString
    case isBoolean

    var name: String {
        switch self {
        case .val: "val"
        case .child: "child"
        case .parent: "parent"
        case .hasChild: "hasChild"
        case .hasChildren: "hasChildren"
        case .exists: "exists"
        case .getPriority: "getPriority"
        case .isNumber: "isNumber"
        case .isString: "isString"
        case .isBoolean: "isBoolean"
        }
    }
}

/// The methods of strings, with their compiled arguments.
enum StringMethod: Sendable {
    case contains(CompiledExpression)
    case beginsWith(CompiledExpression)
    case endsWith(CompiledExpression)
    case replace(CompiledExpression, with: CompiledExpression)
    case toLowerCase
    case toUpperCase
    case matches(RulePattern)

    var name: String {
        switch self {
        case .contains: "contains"
        case .beginsWith: "beginsWith"
        case .endsWith: "endsWith"
        case .replace: "replace"
        case .toLowerCase: "toLowerCase"
        case .toUpperCase: "toUpperCase"
        case .matches: "matches"
        }
    }
}
