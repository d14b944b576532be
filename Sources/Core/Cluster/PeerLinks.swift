import DomainSeam
import Foundation
import HubbubClient
import HubbubCrypto
import Logging
import Realtime
import Synchronization
import Transport
import WebSocket

/// This node's links to the others, one WebSocket per peer (`ws://<address>/cluster`, opened on
/// first use, presenting the cluster's key), carrying forwarded requests and their replies.
public final class PeerLinks: Sendable {
    /// The header a link presents its key in.
    public static let keyHeader = "X-Hubbub-Cluster-Key"

    private let links = Mutex<[String: PeerLink]>([:])
    private let key = Mutex<String>("")
    let timeoutSeconds: Double
    let logger: Logger
    private let loops = ClientLoops(count: 1)

    public init(timeoutSeconds: Double = 10, logger: Logger) {
        self.timeoutSeconds = timeoutSeconds
        self.logger = logger
    }

    /// The cluster's key (read from the database at start), presented on every link.
    public func setKey(_ value: String) { key.withLock { $0 = value } }
    public var currentKey: String { key.withLock { $0 } }

    static func newSecret() -> String { Digest.randomToken(length: 32) }

    /// The link to the node at `address` (`host:port`).
    public func peer(at address: String) -> PeerLink {
        links.withLock { links in
            if let l = links[address] { return l }
            let l = PeerLink(address: address, links: self)
            links[address] = l
            return l
        }
    }

    func loop() throws -> Transport.EventLoop { try loops.next() }

    /// Closes every link (a stop).
    public func closeAll() async {
        for l in links.withLock({ Array($0.values) }) { await l.close() }
    }
}

/// One peer node, as requests are forwarded to it. Requests go out in the order `forward` is
/// called; each reply is matched by the id this link gave it.
public actor PeerLink: PeerNode {
    public let address: String
    private unowned let links: PeerLinks
    private var client: WebSocketClient?
    private var connecting: Task<WebSocketClient, Error>?
    private var pending: [Int: @Sendable (Result<[UInt8], ProtocolError>) -> Void] = [:]
    private var nextID = 1

    init(address: String, links: PeerLinks) {
        self.address = address
        self.links = links
    }

    private static let unreachable = ProtocolError(.unavailable, "the room's node cannot be reached; try again")

    private func connection() async throws(ProtocolError) -> WebSocketClient {
        if let client { return client }
        let task = connecting ?? Task { [address, links] in
            var options = WebSocketClient.Options()
            options.headers = [(PeerLinks.keyHeader, links.currentKey)]
            options.handshakeTimeoutMillis = Int(links.timeoutSeconds * 1000)
            return try await WebSocketClient.connect(to: "ws://\(address)/cluster", options: options, loop: try links.loop())
        }
        connecting = task
        do {
            let c = try await task.value
            connecting = nil
            if client == nil {
                client = c
                Task { await self.read(c) }
            }
            return client!
        } catch {
            connecting = nil
            links.logger.warning("cluster: cannot link to a node", metadata: ["address": "\(address)", "error": "\(error)"])
            throw Self.unreachable
        }
    }

    /// Sends request `op` to the peer (in call order) and returns; `completion` gets its reply's
    /// text, or an error if the link fails or the peer does not answer in time.
    public func forward(op: String, args: JSON, user: String?, address from: String,
                        completion: @escaping @Sendable (Result<[UInt8], ProtocolError>) -> Void) async throws(ProtocolError) {
        let c = try await connection()
        let id = nextID
        nextID += 1
        pending[id] = completion
        var request: [(String, JSON)] = [("id", .int(id)), ("op", .string(op)), ("args", args), ("from", .string(from))]
        if let user { request.append(("as", .string(user))) }
        c.send(text: JSON.object(request).encoded)
        let timeout = links.timeoutSeconds
        Task {
            try? await Task.sleep(for: .seconds(timeout))
            self.fail(id, ProtocolError(.unavailable, "the room's node did not answer in time; try again"))
        }
    }

    public func forward(op: String, args: JSON, user: String?, address: String) async throws(ProtocolError) -> [UInt8] {
        let outcome: Result<[UInt8], ProtocolError> = await withCheckedContinuation { done in
            Task {
                do throws(ProtocolError) {
                    try await self.forward(op: op, args: args, user: user, address: address) { done.resume(returning: $0) }
                } catch {
                    done.resume(returning: .failure(error))
                }
            }
        }
        return try outcome.get()
    }

    public func snapshot(room: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot {
        let r = try await ask(ClusterOp.snapshot, ["room": .string(room), "view": view], user: user)
        guard case .int(let seq)? = r["seq"], case .string(let epoch)? = r["epoch"], let data = r["data"] else {
            throw ProtocolError(.internal, "a node answered a snapshot without one")
        }
        let mark: UInt64? = if case .string(let m)? = r["mark"] { UInt64(m) } else { nil }
        return RoomSnapshot(head: .init(seq: UInt64(seq), epoch: epoch), data: data, mark: mark)
    }

    public func resumed(room: String) async throws(ProtocolError) {
        _ = try await ask(ClusterOp.resumed, ["room": .string(room)], user: nil)
    }

    public func http(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) async throws(ProtocolError)
        -> DomainSeam.HTTPResponse {
        let r = try await ask(ClusterOp.http, ForwardedHTTP.arguments(method: method, target: target, headers: headers, body: body), user: nil)
        guard let response = ForwardedHTTP.response(r) else {
            throw ProtocolError(.internal, "a node answered a forwarded request without a response")
        }
        return response
    }

    public func call(op: String, args: JSON) async throws(ProtocolError) -> JSON { try await ask(op, args, user: nil) }

    /// Runs one of the cluster's own requests there and returns its result (its error, thrown).
    private func ask(_ op: String, _ args: JSON, user: String?) async throws(ProtocolError) -> JSON {
        let text = try await forward(op: op, args: args, user: user, address: "")
        let reply: JSON
        do { reply = try JSONParser.parse(text, limits: .trusted) } catch { throw ProtocolError(.internal, "a node answered \(op) with bad JSON") }
        if reply["ok"] == .bool(true), let result = reply["result"] { return result }
        if case .object(let e)? = reply["error"], let code = e.first(where: { $0.0 == "code" })?.1,
           case .string(let c) = code, let errorCode = ErrorCode(rawValue: c),
           case .string(let message)? = e.first(where: { $0.0 == "message" })?.1 {
            throw ProtocolError(errorCode, message)
        }
        throw ProtocolError(.internal, "a node answered \(op) without a result")
    }

    private func fail(_ id: Int, _ error: ProtocolError) {
        pending.removeValue(forKey: id)?(.failure(error))
    }

    private func read(_ c: WebSocketClient) async {
        while let event = await c.nextEvent() {
            guard case .message(let m) = event else { break }
            guard let id = ReplyID.read(m.data) else {
                links.logger.warning("cluster: a link sent something that is not a reply")
                continue
            }
            pending.removeValue(forKey: id)?(.success(m.data))
        }
        if client === c { client = nil }
        let failed = pending
        pending = [:]
        for (_, completion) in failed { completion(.failure(Self.unreachable)) }
    }

    func close() {
        client?.close(code: .goingAway, reason: "node stopping")
        client = nil
    }
}

/// The cluster's own requests over a link.
public enum ClusterOp {
    /// `{room, view}` as a user: the room's snapshot taken on its owner (`{seq, epoch, data}`).
    public static let snapshot = "cluster.snapshot"
    /// `{room}`: a member resumed the room from the log on the asking node (`{}`).
    public static let resumed = "cluster.resumed"
    /// An operator request to an endpoint homed there, and its response (`ForwardedHTTP`).
    public static let http = "cluster.http"
}

/// A reply's id, read from its start (`{"id":123,`: the envelope's own layout), and the same
/// reply with another id, without parsing the rest.
public enum ReplyID {
    static let prefix = Array("{\"id\":".utf8)

    public static func read(_ text: [UInt8]) -> Int? {
        guard text.starts(with: prefix) else { return nil }
        var n = 0, i = prefix.count, digits = 0
        while i < text.count, text[i] >= 0x30, text[i] <= 0x39, digits < 18 {
            n = n * 10 + Int(text[i] - 0x30)
            i += 1
            digits += 1
        }
        return digits > 0 && i < text.count && text[i] == UInt8(ascii: ",") ? n : nil
    }

    /// `text` with its id replaced by `id` (nil if it is not a reply).
    public static func replace(_ text: [UInt8], with id: Int) -> [UInt8]? {
        guard read(text) != nil, let comma = text[prefix.count...].firstIndex(of: UInt8(ascii: ",")) else { return nil }
        return prefix + Array(String(id).utf8) + text[comma...]
    }
}
