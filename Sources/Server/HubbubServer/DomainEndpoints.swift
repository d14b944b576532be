import DomainSeam
import Logging
import Realtime
import Transport
import WebSocket

/// The domains' HTTP endpoints (`/api/...`), found by method and path, each request's body
/// streamed to its handler as a `RequestBody` and its `HTTPResponse` sent back.
struct DomainEndpoints: Sendable {
    let endpoints: [HTTPEndpoint]
    let logger: Logger
    /// Where homed endpoints' leases are held (several nodes); nil: always here.
    let owners: (any RoomOwners)?

    init(_ endpoints: [HTTPEndpoint], owners: (any RoomOwners)? = nil, logger: Logger) throws {
        self.owners = owners
        var seen = Set<String>()
        for e in endpoints {
            guard e.path.hasPrefix("/api/") else {
                throw ConfigurationError(key: "domains", problem: "endpoint \(e.path) is not under /api/")
            }
            // Two patterns that match the same paths would make one of them unreachable.
            let shape = e.method + " " + e.segments.map { $0.first == ":" ? ":" : String($0) }.joined(separator: "/")
            guard seen.insert(shape).inserted else { throw ConfigurationError(key: "domains", problem: "two domains serve \(e.method) \(e.path)") }
        }
        self.endpoints = endpoints
        self.logger = logger
    }

    /// Where a request under `/api/` goes: its endpoint, 405 when the path is served for other
    /// methods only, nil when no endpoint serves the path.
    func route(_ head: HTTPHead) -> Route? {
        let matches = endpoints.compactMap { e in e.match(head.path).map { (e, $0) } }
        guard !matches.isEmpty else { return nil }
        guard let (endpoint, parameters) = matches.first(where: { $0.0.method == head.method }) else {
            let allowed = matches.map(\.0.method).joined(separator: ", ")
            return .http(status: 405, contentType: "text/plain; charset=utf-8", body: Array("use \(allowed)\n".utf8), headers: [("Allow", allowed)])
        }
        let logger = self.logger, owners = self.owners
        return .body(HTTPBodyEndpoint(maxBytes: endpoint.maxBodyBytes) { head, exchange in
            BodyBridge(endpoint: endpoint, parameters: parameters, head: head, exchange: exchange, owners: owners, logger: logger)
        })
    }
}

/// One request's body, from the connection's loop to the endpoint's handler task: each piece is
/// copied once into the `RequestBody` (which pauses the socket while the handler lags), and the
/// handler's response goes back through the exchange. A homed endpoint whose lease another node
/// holds gets the body whole there, over the node link.
final class BodyBridge: HTTPBodyHandler {
    let body: RequestBody

    init(endpoint: HTTPEndpoint, parameters: [String: String], head: HTTPHead, exchange: HTTPExchange, owners: (any RoomOwners)?,
         logger: Logger) {
        body = RequestBody(pause: { exchange.pauseReading() }, resume: { exchange.resumeReading() })
        let request = HTTPRequest(method: head.method, target: head.target, parameters: parameters, headers: head.headers, body: body)
        let started = ContinuousClock.now
        let serving = Serving(endpoint: endpoint, owners: owners)
        Task {
            let response = await serving.serve(request)
            exchange.respond(status: response.status, contentType: response.contentType, body: response.body, headers: response.headers)
            let elapsed = (ContinuousClock.now - started).components
            let ms = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
            logger.info("api", metadata: ["method": "\(head.method)", "path": "\(request.path)", "status": "\(response.status)", "ms": "\(ms)"])
        }
    }

    func onBodyPart(_ bytes: UnsafeRawBufferPointer) { body.append(Array(bytes)) }
    func onBodyEnd(trailers: [HTTPBodyParser.HTTPField]) { body.finish() }
    func onAbort(reason: String) { body.abort(reason: reason) }
}

/// An endpoint served here, or on its lease's holder (a homed endpoint whose lease another node holds).
private struct Serving: Sendable {
    let endpoint: HTTPEndpoint
    let owners: (any RoomOwners)?

    func serve(_ request: HTTPRequest) async -> DomainSeam.HTTPResponse {
        guard let home = endpoint.home, let owners else { return await endpoint.handle(request) }
        let owner: RoomOwner
        do { owner = try await owners.owner(of: home) } catch { return Self.unavailable(error) }
        guard case .peer(let peer) = owner else { return await endpoint.handle(request) }
        let (bytes, refusal) = await request.wholeBody(upTo: endpoint.maxBodyBytes, setting: "the endpoint's body limit")
        guard let bytes else { return refusal! }
        do {
            return try await peer.http(method: request.method, target: request.target, headers: request.headers, body: bytes)
        } catch {
            if error.code == .unavailable { owners.forget(home) }
            return Self.unavailable(error)
        }
    }

    private static func unavailable(_ error: ProtocolError) -> DomainSeam.HTTPResponse {
        .error(503, error.message, headers: [("Retry-After", "1")])
    }
}
