import Transport
import WebSocket

/// `/echo`: every message straight back with the same opcode, on the loop thread (no hops).
/// One shared instance serves every connection: an idle echo connection costs no handler.
final class EchoHandler: WebSocketHandler, Sendable {
    static let shared = EchoHandler()

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        message.data.withUnsafeBytes { onMessage(message.kind, bytes: $0, connection: connection) }
    }

    func onMessage(_ kind: MessageKind, bytes: UnsafeRawBufferPointer, connection: WebSocketConnection) {
        connection.sendFrame(kind, payload: bytes)
    }
}

/// `/broadcast` (benchmarks): each message goes to every `/broadcast` connection, the sender
/// included, encoded once, through the same per-loop delivery that room pushes use. Members are
/// kept per event loop and touched only by their loop, so a publish costs one task per loop, not
/// one per subscriber.
final class BroadcastHub: Sendable {
    private let members: [LoopMembers]
    private let loops: [EventLoop]

    /// The connections of one loop; only that loop's thread reads or writes it.
    final class LoopMembers: @unchecked Sendable {
        var ids: [ConnectionID] = []
    }

    /// A member's place in its loop's list, so leaving costs O(1).
    final class Member: WebSocketHandler {
        let hub: BroadcastHub
        var position: Int
        init(hub: BroadcastHub, position: Int) {
            self.hub = hub
            self.position = position
        }

        func onMessage(_ message: Message, connection: WebSocketConnection) {
            hub.publish(OutboundMessage(kind: message.kind, payload: message.data), from: connection.handle.loop)
        }

        func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
            hub.leave(self, loop: connection.handle.loop)
        }
    }

    init(loops: [EventLoop]) {
        self.loops = loops
        self.members = loops.map { _ in LoopMembers() }
    }

    /// Adds a connection (on its loop thread); the member must be the connection's handler.
    func join(_ connection: WebSocketConnection) -> Member {
        let list = members[connection.handle.loop.index]
        let member = Member(hub: self, position: list.ids.count)
        list.ids.append(connection.handle.id)
        return member
    }

    private func leave(_ member: Member, loop: EventLoop) {
        let list = members[loop.index]
        let last = list.ids.removeLast()
        if member.position < list.ids.count {
            list.ids[member.position] = last
            (loop.connection(for: last)?.handler as? Member)?.position = member.position
        }
    }

    /// Sends to every member: inline on the publishing loop, one task for each other loop.
    func publish(_ message: OutboundMessage, from origin: EventLoop) {
        for loop in loops where loop !== origin {
            let list = members[loop.index]
            loop.execute { $0.deliver(message, to: list.ids) }
        }
        origin.deliver(message, to: members[origin.index].ids)
    }
}
