import Foundation

/// The `NSEnumerator` ``DataSnapshot/children`` and ``MutableData/children`` return, as Firebase's
/// do: it hands out the children one by one, in order.
final class ChildEnumerator: NSEnumerator {
    private var remaining: IndexingIterator<[Any]>

    init(_ children: [Any]) {
        remaining = children.makeIterator()
        super.init()
    }

    override func nextObject() -> Any? { remaining.next() }
}
