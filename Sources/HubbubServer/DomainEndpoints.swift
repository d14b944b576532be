import DomainSeam
import Logging
import Transport
import WebSocket

/// The domains' HTTP endpoints (`/api/...`), found by method and path, each request's body
/// streamed to its handler as a `RequestBody` and its `HTTPResponse` sent back.
struct DomainEndpoints: Sendable {
    let endpoints: [HTTPEndpoint]
    let logger: Logger

    init(_ endpoints: [HTTPEndpoint], logger: Logger) throws {
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
        let logger = self.logger
        return .body(HTTPBodyEndpoint(maxBytes: endpoint.maxBodyBytes) { head, exchange in
            BodyBridge(endpoint: endpoint, parameters: parameters, head: head, exchange: exchange, logger: logger)
        })
    }
}

/// One request's body, from the connection's loop to the endpoint's handler task: each piece is
/// copied once into the `RequestBody` (which pauses the socket while the handler lags), and the
/// handler's response goes back through the exchange.
final class BodyBridge: HTTPBodyHandler {
    let body: RequestBody

    init(endpoint: HTTPEndpoint, parameters: [String: String], head: HTTPHead, exchange: HTTPExchange, logger: Logger) {
        body = RequestBody(pause: { exchange.pauseReading() }, resume: { exchange.resumeReading() })
        let request = HTTPRequest(method: head.method, target: head.target, parameters: parameters, headers: head.headers, body: body)
        let started = ContinuousClock.now
        Task {
            let response = await endpoint.handle(request)
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
