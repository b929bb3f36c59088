import PropertyBased
import Testing
import Tree

struct PushIDTests {
    static let alphabet = Set("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    @Test func alphabetIsInASCIIOrder() {
        #expect(PushIDGenerator.alphabet.count == 64)
        #expect(PushIDGenerator.alphabet == PushIDGenerator.alphabet.sorted())
        #expect(Set(PushIDGenerator.alphabet) == Self.alphabet)
    }

    @Test func idsAreTwentyCharactersOfTheAlphabet() {
        let generator = PushIDGenerator()
        for now in [0, 1, 1_700_000_000_000, 281_474_976_710_655] as [Int64] {
            let id = generator.next(now: now)
            #expect(id.utf8.count == 20)
            #expect(id.utf8.allSatisfy(Self.alphabet.contains), "\(id)")
            #expect((try? ChildKey(validating: id)) != nil, "push ids must be valid keys")
        }
    }

    @Test(arguments: [
        (Int64(0), "--------"),
        (1, "-------0"),
        (63, "-------z"),
        (64, "------0-"),
        (1_700_000_000_000, "-NjEtLV-"),
        (281_474_976_710_655, "zzzzzzzz"),  // 64^8 - 1
    ])
    func timePartEncodesMilliseconds(now: Int64, prefix: String) {
        let id = PushIDGenerator().next(now: now)
        #expect(id.prefix(8) == prefix)
        #expect(PushIDGenerator.timestamp(of: id) == now)
    }

    @Test func timestampRoundTrip() async {
        await propertyCheck(count: 500, input: Gen.int64(in: 0...281_474_976_710_655)) { now in
            #expect(PushIDGenerator.timestamp(of: PushIDGenerator().next(now: now)) == now)
        }
    }

    @Test func timestampRejectsNonIDs() {
        #expect(PushIDGenerator.timestamp(of: "") == nil)
        #expect(PushIDGenerator.timestamp(of: "-NjEtLV-") == nil)
        #expect(PushIDGenerator.timestamp(of: String(repeating: "a", count: 21)) == nil)
        #expect(PushIDGenerator.timestamp(of: "-NjE.LV-abcdefghijkl") == nil)
    }

    @Test func idsInOneMillisecondStrictlyIncrease() {
        let generator = PushIDGenerator()
        var previous = generator.next(now: 1_700_000_000_000)
        for _ in 0..<10_000 {
            let id = generator.next(now: 1_700_000_000_000)
            #expect(Self.precedes(previous, id), "\(previous) then \(id)")
            #expect(id.prefix(8) == "-NjEtLV-")
            previous = id
        }
    }

    @Test func idsAcrossMillisecondsStrictlyIncrease() async {
        await propertyCheck(count: 50, input: Gen.int(in: 0...3).array(of: 1...300)) { steps in
            let generator = PushIDGenerator()
            var now: Int64 = 1_700_000_000_000
            var previous = generator.next(now: now)
            for step in steps {
                now += Int64(step)
                let id = generator.next(now: now)
                #expect(Self.precedes(previous, id), "\(previous) then \(id)")
                #expect(PushIDGenerator.timestamp(of: id) == now)
                previous = id
            }
        }
    }

    @Test func idsStillIncreaseWhenTheClockGoesBack() {
        let generator = PushIDGenerator()
        let first = generator.next(now: 2_000)
        let second = generator.next(now: 1_000)
        let third = generator.next(now: 1_500)
        #expect(Self.precedes(first, second))
        #expect(Self.precedes(second, third))
        #expect(generator.next(now: 3_000).prefix(8) == PushIDGenerator().next(now: 3_000).prefix(8))
    }

    @Test func idsSortAsKeysInCreationOrder() {
        let generator = PushIDGenerator()
        let ids = (0..<200).map { generator.next(now: 1_700_000_000_000 + Int64($0 / 50)) }
        #expect(ids.map { ChildKey($0) }.sorted() == ids.map { ChildKey($0) })
    }

    @Test func sharedGeneratorNeverRepeatsAcrossTasks() async {
        let generator = PushIDGenerator()
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<1_000).map { _ in generator.next(now: 1_700_000_000_000) } }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(ids.count == 4_000)
        #expect(Set(ids).count == 4_000)
    }

    /// ASCII (byte) order, the order clients and key comparison use for push ids.
    static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
}
