import Cluster
import HubbubCrypto
import Logging
import Realtime
import Transport
import WebClient
import WebSocket

/// Routes requests: WebSocket endpoints, health, and the operator endpoints behind `api.key`.
final class HubbubApplication: ServerApplication, @unchecked Sendable {
    let configuration: HubbubConfiguration
    let metrics: MetricsExposition
    /// Set once the server (and its loops) exist, before the loops start.
    var broadcast: BroadcastHub?
    private let policy: Handshake.ServerPolicy
    private let echoEndpoint: WebSocketEndpoint
    private let sessionEndpoint: WebSocketEndpoint
    private var broadcastEndpoint: WebSocketEndpoint?
    private let api: DomainEndpoints
    /// The web client's pages and scripts (nil: `web.enabled` is off).
    private let web: WebResponder?
    /// Other nodes' links (several nodes on PostgreSQL), behind the cluster's key.
    private let clusterEndpoint: WebSocketEndpoint?
    private let links: PeerLinks?
    /// The shared database as this node sees it (several nodes), for `/healthz`.
    private let health: ClusterHealth?
    private let nodeID: String?
    /// Why this node's store cannot commit now (nil: it can), for `/healthz`.
    private let storeFault: @Sendable () -> String?

    init(configuration: HubbubConfiguration, metrics: MetricsExposition, sessions: SessionContext, api: DomainEndpoints, web: WebResponder?,
         storeFault: @escaping @Sendable () -> String?, cluster: (owners: Ownership, links: PeerLinks, health: ClusterHealth)? = nil) {
        self.storeFault = storeFault
        links = cluster?.links
        health = cluster?.health
        nodeID = cluster?.owners.nodeID
        if let cluster {
            var limits = configuration.transport(tlsContext: nil).webSocket
            limits.pingIntervalNanos = 0 // the peer's link is alive as long as its requests flow; it reconnects
            limits.idleTimeoutNanos = 0
            // A forwarded operator request carries its body whole, in base64.
            let largest = api.endpoints.map(\.maxBodyBytes).max() ?? 0
            limits.maxMessageSize = max(limits.maxMessageSize, largest / 3 * 4 + (1 << 20))
            limits.maxFrameSize = max(limits.maxFrameSize, limits.maxMessageSize)
            clusterEndpoint = WebSocketEndpoint(policy: Handshake.ServerPolicy(),
                                                webSocket: limits) { connection in
                ClusterLinkHandler(connection: connection, context: sessions, owners: sessions.owners ?? cluster.owners)
            }
        } else {
            clusterEndpoint = nil
        }
        self.configuration = configuration
        self.api = api
        self.web = web
        self.metrics = metrics
        policy = Handshake.ServerPolicy(subprotocols: ["hubbub.v1"], allowedOrigins: configuration.allowedOrigins,
                                        deflate: configuration.deflatePolicy)
        var echoLimits = configuration.transport(tlsContext: nil).webSocket
        echoLimits.maxMessageSize = configuration.limits.echoMaxMessageBytes
        echoLimits.maxFrameSize = configuration.limits.echoMaxMessageBytes
        echoEndpoint = WebSocketEndpoint(policy: policy, webSocket: echoLimits) { _ in EchoHandler.shared }
        sessionEndpoint = WebSocketEndpoint(policy: policy) { connection in SessionHandler(connection: connection, context: sessions) }
    }

    func attach(broadcast hub: BroadcastHub) {
        broadcast = hub
        broadcastEndpoint = WebSocketEndpoint(policy: policy) { connection in
            hub.join(connection)
        }
    }

    func route(_ head: HTTPHead, secure: Bool) -> Route {
        switch head.path {
        case "/ws":
            return .webSocket(sessionEndpoint)
        case "/cluster":
            guard let clusterEndpoint, let links else { return .text(404, "no such endpoint: /cluster\n") }
            let key = links.currentKey
            guard !key.isEmpty, let presented = head.value(PeerLinks.keyHeader),
                  Digest.constantTimeEqual(Array(presented.utf8), Array(key.utf8)) else {
                return .text(401, "a node's link needs the cluster's key\n")
            }
            return .webSocket(clusterEndpoint)
        case "/echo" where configuration.echo:
            return .webSocket(echoEndpoint)
        case "/broadcast" where configuration.bench:
            if let broadcastEndpoint { return .webSocket(broadcastEndpoint) }
            return .text(503, "broadcast is starting\n")
        case "/healthz":
            guard head.method == "GET" || head.method == "HEAD" else { return .text(405, "use GET\n") }
            return healthz()
        case "/metrics":
            guard head.method == "GET" else { return .text(405, "use GET\n") }
            if let refusal = operatorRefusal(head) { return refusal }
            return .http(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render(), headers: [])
        case let path where path.hasPrefix("/api/"):
            // Without a key the operator API does not exist; with one, nothing is said to a caller without it.
            guard !configuration.api.key.isEmpty else { return .text(404, "no such endpoint: \(path)\n") }
            if let refusal = operatorRefusal(head) { return refusal }
            return api.route(head) ?? .text(404, "no such endpoint: \(path)\n")
        default:
            if let web, let r = web.respond(method: head.method, path: head.path, acceptEncoding: head.value("Accept-Encoding"),
                                            ifNoneMatch: head.value("If-None-Match")) {
                return .http(status: r.status, contentType: r.contentType, body: r.body, headers: r.headers)
            }
            return .text(404, "no such endpoint: \(head.path)\n")
        }
    }

    /// `/healthz`: 200 while this node can save what it acknowledges, else 503 with the reason, so
    /// that a load balancer sends no one to a node whose store cannot commit (a full disk, a
    /// read-only file system, an I/O error; on several nodes also a database it cannot write to
    /// or whose notifications it does not hear). It turns 200 again by itself.
    private func healthz() -> Route {
        var fields: [(String, JSON)] = []
        var reasons: [String] = []
        if let fault = storeFault() { reasons.append("the store cannot commit: \(fault)") }
        if let health, let nodeID {
            let reachable = health.databaseReachable
            if !reachable { reasons.append("the database does not take this node's writes or it does not hear the other nodes") }
            fields += [("node", .string(nodeID)), ("database", .string(reachable ? "reachable" : "unreachable")),
                       ("notifications", .bool(health.listening))]
        }
        fields.insert(("status", .string(reasons.isEmpty ? "ok" : "unavailable")), at: 0)
        if !reasons.isEmpty { fields.append(("reason", .string(reasons.joined(separator: "; ")))) }
        return .http(status: reasons.isEmpty ? 200 : 503, contentType: "application/json",
                     body: Array((JSON.object(fields).encoded + "\n").utf8), headers: reasons.isEmpty ? [] : [("Retry-After", "1")])
    }

    /// nil when the request carries the operator key (`api.key`), else the 401 to answer. The key
    /// is compared in constant time and never echoed.
    private func operatorRefusal(_ head: HTTPHead) -> Route? {
        let key = configuration.api.key
        guard !key.isEmpty else { return Self.unauthorized("no api.key is configured: operator endpoints are off\n") }
        if let value = head.value("Authorization"), value.count > 7, value.prefix(7).lowercased() == "bearer ",
           Digest.constantTimeEqual(Array(value.dropFirst(7).utf8), Array(key.utf8)) {
            return nil
        }
        return Self.unauthorized("send Authorization: Bearer <api.key>\n")
    }

    private static func unauthorized(_ why: String) -> Route {
        .http(status: 401, contentType: "text/plain; charset=utf-8", body: Array(why.utf8),
              headers: [("WWW-Authenticate", "Bearer realm=\"hubbub\"")])
    }
}
