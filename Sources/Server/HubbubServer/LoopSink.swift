import Realtime
import Transport
import WebSocket

/// Delivers pushes and replies to connections by their `ConnectionID`: one hand-over to the
/// owning loop per batch of members.
final class LoopSink: PushSink, @unchecked Sendable {
    /// Set once, before the transport starts (the loops exist only once the server does), and
    /// never changed after: read without a lock from any thread.
    private var loops: [EventLoop] = []

    func attach(_ loops: [EventLoop]) { self.loops = loops }

    func deliver(_ message: OutboundMessage, to members: [ConnectionID]) {
        guard let first = members.first else { return }
        let loop = loops[Int(first.loop)]
        if members.count == 1 { loop.send(message, to: first) } else { loop.send(message, to: members) }
    }

    func deliver(_ message: OutboundMessage, to member: ConnectionID) {
        loops[Int(member.loop)].send(message, to: member)
    }

    func close(_ member: ConnectionID, code: CloseCode, reason: String) {
        loops[Int(member.loop)].close(member, code: code, reason: reason)
    }
}
