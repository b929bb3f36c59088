/// A bound the server keeps on what clients can make it hold; each is a ``ServerConfiguration``
/// field and a `canopy-server` flag, and each trip counts in `canopy_limit_trips_total{limit=…}`.
enum ServerLimit: String, CaseIterable, Sendable {
    /// ``ServerConfiguration/maxOpenNamespaces``.
    case namespaces
    /// ``ServerConfiguration/createsNamespaces``: a request to a namespace that does not exist, where
    /// writes do not create namespaces.
    case namespaceCreation = "namespace_creation"
    /// ``ServerConfiguration/maxUncommittedWrites``: a write refused while the store is behind.
    case uncommittedWrites = "uncommitted_writes"
    /// ``ServerConfiguration/maxListensPerConnection``.
    case listensPerConnection = "listens_per_connection"
    /// ``ServerConfiguration/maxOnDisconnectBytes``.
    case onDisconnectBytes = "on_disconnect_bytes"
    /// ``ServerConfiguration/maxPendingRequestBytes``: a realtime connection stopped being read.
    case pendingRequestBytes = "pending_request_bytes"
    /// ``ServerConfiguration/maxPendingOutboundBytes``: a realtime connection that does not read.
    case pendingOutboundBytes = "pending_outbound_bytes"
    /// ``ServerConfiguration/maxTotalPendingOutboundBytes``: a reader closed to make room.
    case totalPendingOutboundBytes = "total_pending_outbound_bytes"
}
