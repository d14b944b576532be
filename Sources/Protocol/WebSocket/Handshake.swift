import HubbubCrypto

/// The opening handshake (RFC 6455 §4): the server's validation of an upgrade request, the
/// client's request and its check of the answer.
public enum Handshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(Digest.sha1(Array((key + guid).utf8)))
    }

    /// What the server allows in an upgrade.
    public struct ServerPolicy: Sendable {
        /// Subprotocols we speak, most preferred first.
        public var subprotocols: [String]
        /// When non-empty, only these `Origin` values may connect (browsers always send Origin).
        public var allowedOrigins: [String]
        public var deflate: PerMessageDeflate.Configuration

        public init(subprotocols: [String] = [], allowedOrigins: [String] = [], deflate: PerMessageDeflate.Configuration = .init()) {
            self.subprotocols = subprotocols
            self.allowedOrigins = allowedOrigins
            self.deflate = deflate
        }
    }

    /// An accepted upgrade: the 101 response and what was agreed.
    public struct Accepted: Sendable, Equatable {
        public var response: [UInt8]
        public var subprotocol: String?
        public var deflate: PerMessageDeflate.Parameters?
    }

    /// Whether a request asks for a WebSocket at all (else it is plain HTTP).
    public static func isUpgradeRequest(_ head: HTTPHead) -> Bool {
        head.value("Upgrade") != nil || head.value("Sec-WebSocket-Key") != nil
    }

    /// Validates an upgrade request per RFC 6455 §4.2.1 and builds the 101 answer, or says
    /// which status to refuse it with and why.
    public static func accept(_ head: HTTPHead, policy: ServerPolicy) -> Result<Accepted, HTTPError> {
        guard head.method == "GET" else {
            return .failure(HTTPError(405, "WebSocket upgrade needs GET, not \(head.method)", headers: ["Allow": "GET"], label: "method"))
        }
        guard head.startLine.2 == "HTTP/1.1" else {
            return .failure(HTTPError(505, "WebSocket upgrade needs HTTP/1.1", label: "http_version"))
        }
        guard let host = head.value("Host"), !host.isEmpty, head.values("Host").count == 1 else {
            return .failure(HTTPError(400, "missing or repeated Host header", label: "host"))
        }
        guard head.hasToken("Upgrade", "websocket") else {
            return .failure(HTTPError(400, "Upgrade header must be websocket", label: "upgrade_header"))
        }
        guard head.hasToken("Connection", "upgrade") else {
            return .failure(HTTPError(400, "Connection header must include Upgrade", label: "connection_header"))
        }
        guard let version = head.value("Sec-WebSocket-Version"), version == "13" else {
            return .failure(HTTPError(426, "unsupported Sec-WebSocket-Version (only 13)", headers: ["Sec-WebSocket-Version": "13"], label: "version"))
        }
        guard head.values("Sec-WebSocket-Key").count == 1, let key = head.value("Sec-WebSocket-Key") else {
            return .failure(HTTPError(400, "missing Sec-WebSocket-Key", label: "key"))
        }
        guard let decoded = Base64.decode(key), decoded.count == 16 else {
            return .failure(HTTPError(400, "Sec-WebSocket-Key must be 16 bytes in base64", label: "key"))
        }
        if !policy.allowedOrigins.isEmpty, let origin = head.value("Origin"), !policy.allowedOrigins.contains(origin) {
            return .failure(HTTPError(403, "origin \(origin) is not allowed", label: "origin"))
        }
        var subprotocol: String?
        if let offered = head.value("Sec-WebSocket-Protocol") {
            let names = offered.split(separator: ",").map { $0.trimmingSpaces() }
            // Our preference decides (the policy lists them most preferred first), among those offered.
            subprotocol = policy.subprotocols.first { names.contains($0) }
        }
        let deflate = PerMessageDeflate.negotiate(offers: head.value("Sec-WebSocket-Extensions"), configuration: policy.deflate)
        var text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Accept: \(acceptValue(forKey: key))\r\n"
        if let subprotocol { text += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        if let deflate { text += "Sec-WebSocket-Extensions: \(deflate.responseHeader)\r\n" }
        text += "\r\n"
        return .success(Accepted(response: Array(text.utf8), subprotocol: subprotocol, deflate: deflate))
    }

    // MARK: Client side

    /// The client's upgrade request and the key to check the answer against.
    public struct ClientRequest: Sendable {
        public var bytes: [UInt8]
        public var key: String
    }

    /// Builds a client upgrade request.
    public static func clientRequest(host: String, path: String, subprotocols: [String] = [], offerDeflate: Bool,
                                     extraHeaders: [(String, String)] = [], key: [UInt8]) -> ClientRequest {
        let keyText = Base64.encode(key)
        var text = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(keyText)\r\nSec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty { text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n" }
        if offerDeflate { text += "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" }
        for (k, v) in extraHeaders { text += "\(k): \(v)\r\n" }
        text += "\r\n"
        return ClientRequest(bytes: Array(text.utf8), key: keyText)
    }

    /// What the server agreed to, from the client's point of view.
    public struct ClientAccepted: Sendable, Equatable {
        public var subprotocol: String?
        public var deflate: PerMessageDeflate.Parameters?
    }

    /// Checks the server's answer to our request.
    public static func checkResponse(_ head: HTTPHead, key: String, offeredDeflate: Bool,
                                     offeredSubprotocols: [String] = []) -> Result<ClientAccepted, HTTPError> {
        guard head.startLine.1 == "101" else {
            return .failure(HTTPError(Int(head.startLine.1) ?? 502, "server answered \(head.startLine.1) \(head.startLine.2)"))
        }
        guard head.hasToken("Upgrade", "websocket"), head.hasToken("Connection", "upgrade") else {
            return .failure(HTTPError(502, "101 without Upgrade: websocket"))
        }
        guard head.value("Sec-WebSocket-Accept") == acceptValue(forKey: key) else {
            return .failure(HTTPError(502, "wrong Sec-WebSocket-Accept"))
        }
        var deflate: PerMessageDeflate.Parameters?
        if let ext = head.value("Sec-WebSocket-Extensions") {
            guard offeredDeflate, let p = PerMessageDeflate.parseResponse(ext) else {
                return .failure(HTTPError(502, "server chose an extension we did not offer: \(ext)"))
            }
            deflate = p
        }
        let subprotocol = head.value("Sec-WebSocket-Protocol")
        if let subprotocol, !offeredSubprotocols.contains(subprotocol) {
            return .failure(HTTPError(502, "server chose a subprotocol we did not offer: \(subprotocol)"))
        }
        return .success(ClientAccepted(subprotocol: subprotocol, deflate: deflate))
    }
}
