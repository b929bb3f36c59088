import NIOCore

extension RealtimeConnection {
    /// Delivers each push to its subscriber, in order: a push that goes to several connections in
    /// a row is handed to each event loop once, with the connections of that loop.
    ///
    /// Handing a push to a thousand connections one by one retained and released its frames a
    /// thousand times from this thread while the loops released them as they wrote, every one of
    /// those waiting for the memory the others had just changed. Now this thread hands each loop
    /// one entry, with a copy of the frames of its own.
    static func deliver(_ deliveries: [(any Subscriber, Push)]) {
        var start = deliveries.startIndex
        while start < deliveries.endIndex {
            let push = deliveries[start].1
            var end = start + 1
            while end < deliveries.endIndex, deliveries[end].1 === push { end += 1 }
            if end - start == 1 {
                deliveries[start].0.deliver(push)
            } else {
                deliver(push, to: start..<end, of: deliveries)
            }
            start = end
        }
    }

    private static func deliver(_ push: Push, to range: Range<Int>, of deliveries: [(any Subscriber, Push)]) {
        var groups: [(batch: FlushBatch, connections: [Unmanaged<RealtimeConnection>])] = []
        for index in range {
            guard let connection = deliveries[index].0 as? RealtimeConnection else {
                deliveries[index].0.deliver(push)
                continue
            }
            // `deliveries` holds the connection until the loop has handed it the push.
            let target = Unmanaged.passUnretained(connection)
            if let group = groups.firstIndex(where: { $0.batch === connection.flushBatch }) {
                groups[group].connections.append(target)
            } else {
                var connections: [Unmanaged<RealtimeConnection>] = []
                connections.reserveCapacity(range.count)
                connections.append(target)
                groups.append((connection.flushBatch, connections))
            }
        }
        guard !groups.isEmpty else { return }
        let frames = push.wireFrames
        for (index, group) in groups.enumerated() {
            // Large frames are shared: copying them would cost more than the waits it spares.
            let shared = index == 0 || frames.readableBytes > OutboundFrames.sharedFramesThreshold
            group.batch.submit(
                frames: shared ? frames : ByteBuffer(bytes: frames.readableBytesView),
                to: FlushBatch.PushTargets(deliveries: deliveries, connections: group.connections))
        }
    }
}
