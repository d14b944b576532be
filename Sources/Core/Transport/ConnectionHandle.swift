import WebSocket

/// Identifies a connection from any thread, safely: sends to a connection that has gone are
/// dropped, even if its file descriptor number was reused by a newer connection.
public struct ConnectionHandle: Sendable, Hashable, CustomStringConvertible {
    public let loop: EventLoop
    let fd: Int32
    let generation: UInt32

    public static func == (a: ConnectionHandle, b: ConnectionHandle) -> Bool {
        a.loop === b.loop && a.fd == b.fd && a.generation == b.generation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(loop))
        hasher.combine(fd)
        hasher.combine(generation)
    }

    public var description: String { id.description }

    /// The loop-free name of this connection (what rooms keep as members).
    public var id: ConnectionID { ConnectionID(loop: loop.index, slot: fd, generation: generation) }

    /// Queues a message for this connection (encoded and compressed once, shared).
    public func send(_ message: OutboundMessage) { loop.submit(.send(self, message)) }

    /// Sets the largest message the peer may send from now on (`WebSocketConnection.maxMessageSize`),
    /// on the connection's loop, in order with what was sent to it before.
    public func setMaxMessageSize(_ bytes: Int) {
        let handle = self
        loop.submit(.run { loop in loop.connection(for: handle)?.maxMessageSize = bytes })
    }

    /// Starts the close handshake.
    public func close(code: CloseCode, reason: String = "") { loop.submit(.close(self, code, reason)) }
}

/// Work handed to a loop from other threads.
enum LoopTask {
    case send(ConnectionHandle, OutboundMessage)
    case sendMany([ConnectionID], OutboundMessage)
    case closeID(ConnectionID, CloseCode, String)
    case close(ConnectionHandle, CloseCode, String)
    case run(@Sendable (EventLoop) -> Void)
}
