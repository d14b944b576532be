import Realtime
import Transport
import WebSocket

/// Connections are room members; their event loop is their delivery batch.
extension ConnectionHandle: RoomMember {
    public var batch: Int { loop.index }
}

/// Delivers a push to a batch of connections of one loop with a single hand-over.
struct LoopSink: PushSink {
    func deliver(_ message: OutboundMessage, to members: [ConnectionHandle]) {
        guard let first = members.first else { return }
        if members.count == 1 { first.send(message) } else { first.loop.send(message, to: members) }
    }
}
