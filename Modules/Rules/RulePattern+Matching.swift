extension RulePattern {
    /// Whether the pattern matches somewhere in `string` (everywhere, with both anchors).
    ///
    /// Runs every thread of the program in lock step over the string's Unicode scalars: O(n·m)
    /// time for a string of n scalars and a program of m instructions, working memory on the stack
    /// for small programs.
    func matches(_ string: String) -> Bool {
        let count = program.count
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 5 * count + 2) { buffer in
            var run = PatternRun(program: program, buffer: buffer)
            var generation = 1
            run.addThread(0, generation: generation)
            if run.accepted, !anchoredAtEnd { return true }
            for scalar in string.unicodeScalars {
                if run.isIdle { return false }
                run.accepted = false
                generation += 1
                run.step(over: scalar, ignoresCase: ignoresCase, generation: generation)
                if !anchoredAtStart { run.addThread(0, generation: generation) }
                if run.accepted, !anchoredAtEnd { return true }
            }
            return run.accepted
        }
    }
}

/// The threads of one run of a pattern over a string, kept in caller-provided memory: the
/// generation each instruction was last added in, the current and the next thread lists, and the
/// stack of the epsilon closure.
private struct PatternRun {
    let program: [PatternInstruction]
    private let marks: UnsafeMutableBufferPointer<Int>
    private var current: UnsafeMutableBufferPointer<Int>
    private var next: UnsafeMutableBufferPointer<Int>
    private let stack: UnsafeMutableBufferPointer<Int>
    private var currentCount = 0
    private var nextCount = 0
    /// Whether the instructions added since the last step reach ``PatternInstruction/accept``.
    var accepted = false

    init(program: [PatternInstruction], buffer: UnsafeMutableBufferPointer<Int>) {
        self.program = program
        let count = program.count
        buffer.initialize(repeating: 0)
        marks = UnsafeMutableBufferPointer(rebasing: buffer[0..<count])
        current = UnsafeMutableBufferPointer(rebasing: buffer[count..<(2 * count)])
        next = UnsafeMutableBufferPointer(rebasing: buffer[(2 * count)..<(3 * count)])
        stack = UnsafeMutableBufferPointer(rebasing: buffer[(3 * count)...])
    }

    /// Whether no thread is alive (and none will start again).
    var isIdle: Bool { currentCount == 0 }

    /// Adds the thread at `start`, and every instruction it reaches without consuming, to the
    /// current list.
    mutating func addThread(_ start: Int, generation: Int) {
        var depth = 0
        stack[depth] = start
        depth += 1
        while depth > 0 {
            depth -= 1
            let pc = stack[depth]
            if marks[pc] == generation { continue }
            marks[pc] = generation
            switch program[pc] {
            case .consume:
                current[currentCount] = pc
                currentCount += 1
            case .jump(let target):
                stack[depth] = target
                depth += 1
            case .split(let first, let second):
                stack[depth] = second
                stack[depth + 1] = first
                depth += 2
            case .accept:
                accepted = true
            }
        }
    }

    /// Advances every thread over `scalar`.
    mutating func step(over scalar: Unicode.Scalar, ignoresCase: Bool, generation: Int) {
        nextCount = 0
        swap(&current, &next)
        swap(&currentCount, &nextCount)
        // `next` now holds the threads waiting for `scalar`; survivors go to `current`.
        for index in 0..<nextCount {
            let pc = next[index]
            guard case .consume(let matcher) = program[pc], matcher.accepts(scalar, ignoringCase: ignoresCase) else {
                continue
            }
            addThread(pc + 1, generation: generation)
        }
    }
}

extension ScalarMatcher {
    /// Whether this matcher accepts `scalar` (or, ignoring case, its lower- or uppercase form).
    func accepts(_ scalar: Unicode.Scalar, ignoringCase: Bool) -> Bool {
        switch self {
        case .any:
            return !scalar.isLineTerminator
        case .characterClass(let kind, let negated):
            return kind.contains(scalar) != negated
        case .scalar(let expected):
            if scalar == expected { return true }
            return ignoringCase && scalar.anyCaseVariant { $0 == expected }
        case .set(let items, let negated):
            var member = items.contains { $0.contains(scalar) }
            if !member, ignoringCase {
                member = scalar.anyCaseVariant { variant in items.contains { $0.contains(variant) } }
            }
            return member != negated
        }
    }
}

extension PatternSetItem {
    fileprivate func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch self {
        case .scalar(let expected): scalar == expected
        case .range(let low, let high): low <= scalar && scalar <= high
        case .characterClass(let kind, let negated): kind.contains(scalar) != negated
        }
    }
}

extension PatternClass {
    /// JavaScript's classes: `\d` and `\w` are ASCII, `\s` is Unicode white space.
    func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch self {
        case .digit: scalar.isASCIIDigit
        case .word: scalar.isASCIIDigit || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
        case .space: scalar.properties.isWhitespace || scalar == "\u{FEFF}"
        }
    }
}

extension Unicode.Scalar {
    fileprivate var isLineTerminator: Bool {
        self == "\n" || self == "\r" || self == "\u{2028}" || self == "\u{2029}"
    }

    /// Whether `test` holds for the scalar's other-case form (ASCII without looking up Unicode
    /// tables; elsewhere its lowercase and uppercase mappings when they are single scalars).
    fileprivate func anyCaseVariant(_ test: (Unicode.Scalar) -> Bool) -> Bool {
        if isASCII {
            if ("a"..."z").contains(self), let upper = Unicode.Scalar(value - 32) { return test(upper) }
            if ("A"..."Z").contains(self), let lower = Unicode.Scalar(value + 32) { return test(lower) }
            return false
        }
        for mapping in [properties.lowercaseMapping, properties.uppercaseMapping] {
            let scalars = mapping.unicodeScalars
            if scalars.count == 1, let variant = scalars.first, variant != self, test(variant) { return true }
        }
        return false
    }
}
