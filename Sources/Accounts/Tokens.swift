import HubbubCrypto

/// Signed, expiring session tokens: `v1.<user>.<expires>.<id>.<signature>`, the signature an
/// HMAC-SHA-256 under the server's secret. Revocation (logout) is by token id.
public struct Tokens: Sendable {
    let secret: [UInt8]
    public let lifetimeSeconds: Double

    public init(secret: [UInt8], lifetimeSeconds: Double) {
        self.secret = secret
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// What a valid token says.
    public struct Claims: Equatable, Sendable {
        public var user: String
        public var expires: Double
        public var id: String

        public init(user: String, expires: Double, id: String) {
            self.user = user
            self.expires = expires
            self.id = id
        }
    }

    public func issue(user: String, now: Double) -> (token: String, claims: Claims) {
        let claims = Claims(user: user, expires: (now + lifetimeSeconds).rounded(.down), id: Tokens.randomID())
        let body = "v1.\(claims.user).\(Int(claims.expires)).\(claims.id)"
        return (body + "." + sign(body), claims)
    }

    /// Why a token is refused.
    public enum Refusal: Error, Equatable, Sendable {
        case malformed
        case badSignature
        case expired
    }

    public func verify(_ token: String, now: Double) -> Result<Claims, Refusal> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "v1", let expires = Int(parts[2]), !parts[1].isEmpty, !parts[3].isEmpty else {
            return .failure(.malformed)
        }
        let body = parts[0...3].joined(separator: ".")
        guard Digest.constantTimeEqual(Array(sign(body).utf8), Array(parts[4].utf8)) else { return .failure(.badSignature) }
        guard Double(expires) > now else { return .failure(.expired) }
        return .success(Claims(user: String(parts[1]), expires: Double(expires), id: String(parts[3])))
    }

    private func sign(_ body: String) -> String {
        Tokens.base64url(Digest.hmacSHA256(key: secret, message: Array(body.utf8)))
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        String(Base64.encode(bytes).compactMap { c -> Character? in
            switch c {
            case "+": return "-"
            case "/": return "_"
            case "=": return nil
            default: return c
            }
        })
    }

    /// A random identifier (16 bytes, base64url).
    public static func randomID(bytes: Int = 12) -> String { base64url(Digest.randomBytes(bytes)) }
}
