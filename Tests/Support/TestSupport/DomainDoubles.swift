import DomainSeam
import Realtime
import Synchronization
import WebSocket

/// Records what a domain sends, per connection, instead of sending it (domains driven without sockets).
public final class RecordingSink: PushSink {
    private let sent = Mutex<[ConnectionID: [OutboundMessage]]>([:])
    private let closes = Mutex<[ConnectionID: CloseCode]>([:])

    public init() {}

    public func deliver(_ message: OutboundMessage, to members: [ConnectionID]) { for m in members { deliver(message, to: m) } }
    public func deliver(_ message: OutboundMessage, to member: ConnectionID) { sent.withLock { $0[member, default: []].append(message) } }
    public func close(_ member: ConnectionID, code: CloseCode, reason: String) { closes.withLock { $0[member] = code } }

    /// The code `member` was closed with, if it was.
    public func closeCode(_ member: ConnectionID) -> CloseCode? { closes.withLock { $0[member] } }

    /// Everything `member` was sent, in order.
    public func messages(_ member: ConnectionID) -> [OutboundMessage] { sent.withLock { $0[member] ?? [] } }
    /// The pushes `member` received (parsed), in order.
    public func pushes(_ member: ConnectionID) -> [JSON] { parsed(member).filter { $0["event"] != nil } }
    /// The replies `member` received (parsed), in order.
    public func replies(_ member: ConnectionID) -> [JSON] { parsed(member).filter { $0["id"] != nil } }
    public func clear() { sent.withLock { $0 = [:] } }

    private func parsed(_ member: ConnectionID) -> [JSON] { messages(member).compactMap { try? JSONParser.parse($0.payload) } }
}

/// A session that is only a connection id.
public actor FakeSession: SessionControl {
    public nonisolated let member: ConnectionID
    public nonisolated let address = "127.0.0.1"
    public init(_ member: ConnectionID) { self.member = member }
    public func signIn(_ identity: Identity) {}
    public func signOut() -> Identity? { nil }
    public func addSubscription(_ room: String) {}
    public func removeSubscription(_ room: String) {}
}
