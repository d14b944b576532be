/// permessage-deflate (RFC 7692): configuration, offer parsing and the negotiated parameters.
public enum PerMessageDeflate {
    /// Server-side policy for compression.
    public struct Configuration: Sendable, Equatable {
        /// Accept the extension when a client offers it.
        public var enabled: Bool
        /// Ask clients to reset their window per message. With both no-context-takeover settings
        /// on, connections keep no zlib state between messages (memory stays flat) and one
        /// compressed frame can be shared by every subscriber of a push.
        public var serverNoContextTakeover: Bool
        public var clientNoContextTakeover: Bool
        /// Largest LZ77 window the server compresses with (9–15).
        public var serverMaxWindowBits: Int
        /// zlib memLevel for compressors (1–9).
        public var memoryLevel: Int
        /// zlib level (1–9).
        public var compressionLevel: Int
        /// Messages smaller than this are sent uncompressed (RSV1 clear).
        public var minimumSize: Int

        public init(enabled: Bool = true, serverNoContextTakeover: Bool = true, clientNoContextTakeover: Bool = true,
                    serverMaxWindowBits: Int = 15, memoryLevel: Int = 8, compressionLevel: Int = 6, minimumSize: Int = 256) {
            self.enabled = enabled
            self.serverNoContextTakeover = serverNoContextTakeover
            self.clientNoContextTakeover = clientNoContextTakeover
            self.serverMaxWindowBits = serverMaxWindowBits
            self.memoryLevel = memoryLevel
            self.compressionLevel = compressionLevel
            self.minimumSize = minimumSize
        }
    }

    /// What both sides agreed to for one connection.
    public struct Parameters: Sendable, Hashable {
        /// The server resets its compressor per message.
        public var serverNoContextTakeover: Bool
        /// The client resets its compressor per message.
        public var clientNoContextTakeover: Bool
        /// Window the server compresses with.
        public var serverMaxWindowBits: Int
        /// Window the client compresses with (nil: the client's default, 15).
        public var clientMaxWindowBits: Int?

        public init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
                    serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int? = nil) {
            self.serverNoContextTakeover = serverNoContextTakeover
            self.clientNoContextTakeover = clientNoContextTakeover
            self.serverMaxWindowBits = serverMaxWindowBits
            self.clientMaxWindowBits = clientMaxWindowBits
        }

        /// The `Sec-WebSocket-Extensions` value the server answers with.
        public var responseHeader: String {
            var s = "permessage-deflate"
            if serverNoContextTakeover { s += "; server_no_context_takeover" }
            if clientNoContextTakeover { s += "; client_no_context_takeover" }
            if serverMaxWindowBits < 15 { s += "; server_max_window_bits=\(serverMaxWindowBits)" }
            if let c = clientMaxWindowBits { s += "; client_max_window_bits=\(c)" }
            return s
        }
    }

    /// One extension from a `Sec-WebSocket-Extensions` header: a name and its parameters.
    public struct Extension: Equatable, Sendable {
        public var name: String
        public var parameters: [(name: String, value: String?)]

        public static func == (a: Extension, b: Extension) -> Bool {
            a.name == b.name && a.parameters.elementsEqual(b.parameters) { $0.name == $1.name && $0.value == $1.value }
        }
    }

    /// Parses a `Sec-WebSocket-Extensions` value (RFC 6455 §9.1) into extensions, in order.
    /// Returns nil when the header is malformed.
    public static func parseExtensions(_ header: String) -> [Extension]? {
        var result: [Extension] = []
        for item in splitOutsideQuotes(header, separator: ",") {
            let parts = splitOutsideQuotes(item, separator: ";").map { $0.trimmingSpaces() }
            guard let name = parts.first, isToken(name) else { return nil }
            var params: [(String, String?)] = []
            for p in parts.dropFirst() {
                if p.isEmpty { return nil }
                if let eq = p.firstIndex(of: "=") {
                    let key = String(p[..<eq]).trimmingSpaces()
                    var value = String(p[p.index(after: eq)...]).trimmingSpaces()
                    if value.hasPrefix("\"") {
                        guard value.count >= 2, value.hasSuffix("\"") else { return nil }
                        value = String(value.dropFirst().dropLast())
                    }
                    guard isToken(key), isToken(value) else { return nil }
                    params.append((key.lowercased(), value))
                } else {
                    guard isToken(p) else { return nil }
                    params.append((p.lowercased(), nil))
                }
            }
            result.append(Extension(name: name.lowercased(), parameters: params))
        }
        return result
    }

    /// Chooses the first acceptable permessage-deflate offer, or nil (no compression).
    /// Offers with unknown, repeated or out-of-range parameters are declined, as §7 requires.
    public static func negotiate(offers header: String?, configuration: Configuration) -> Parameters? {
        guard configuration.enabled, let header, let extensions = parseExtensions(header) else { return nil }
        for offer in extensions where offer.name == "permessage-deflate" {
            if let accepted = accept(offer, configuration) { return accepted }
        }
        return nil
    }

    private static func accept(_ offer: Extension, _ config: Configuration) -> Parameters? {
        var seen = Set<String>()
        var result = Parameters(serverNoContextTakeover: config.serverNoContextTakeover,
                                clientNoContextTakeover: config.clientNoContextTakeover,
                                serverMaxWindowBits: max(9, min(15, config.serverMaxWindowBits)))
        for (name, value) in offer.parameters {
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                result.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                result.clientNoContextTakeover = true
            case "server_max_window_bits":
                // zlib cannot compress with an 8-bit raw window, so an offer limited to 8 is declined.
                guard let value, let bits = windowBits(value), bits >= 9 else { return nil }
                result.serverMaxWindowBits = min(bits, result.serverMaxWindowBits)
            case "client_max_window_bits":
                // We always inflate with a 15-bit window, so any client window is fine; nothing to answer.
                if let value { guard windowBits(value) != nil else { return nil } }
            default:
                return nil
            }
        }
        return result
    }

    private static func windowBits(_ text: String) -> Int? {
        guard text.count <= 2, text.allSatisfy({ $0.isASCII && $0.isNumber }), !text.hasPrefix("0"),
              let v = Int(text), (8...15).contains(v) else { return nil }
        return v
    }

    /// Reads the server's answer on the client side; nil when it is not an acceptable answer to our offer.
    public static func parseResponse(_ header: String) -> Parameters? {
        guard let exts = parseExtensions(header), exts.count == 1, exts[0].name == "permessage-deflate" else { return nil }
        var p = Parameters()
        var seen = Set<String>()
        for (name, value) in exts[0].parameters {
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                p.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                p.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let value, let b = windowBits(value) else { return nil }
                p.serverMaxWindowBits = b
            case "client_max_window_bits":
                // Reported as given, 8 included: zlib cannot compress with an 8-bit raw window, so a
                // client told 8 must send its messages uncompressed (never widen it to 9).
                guard let value, let b = windowBits(value) else { return nil }
                p.clientMaxWindowBits = b
            default: return nil
            }
        }
        return p
    }

    static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { c in
            c > 0x20 && c < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains(c)
        }
    }

    static func splitOutsideQuotes(_ s: String, separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for ch in s {
            if ch == "\"" { quoted.toggle() }
            if ch == separator && !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        parts.append(current)
        return parts.map { $0.trimmingSpaces() }
    }
}

extension StringProtocol {
    /// Trims spaces and horizontal tabs (HTTP optional whitespace).
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
