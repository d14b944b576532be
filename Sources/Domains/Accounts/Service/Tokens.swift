import HubbubCrypto

/// Signed, expiring session tokens: `v2.<user>.<issued>.<expires>.<id>.<signature>`, the signature
/// an HMAC-SHA-256 under the server's secret. Revocation is by token id (log-out) or by issue time
/// (a password change revokes every token of the account issued before it). Tokens of the older
/// form `v1.<user>.<expires>.<id>.<signature>` are still accepted, as issued at time 0.
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
        /// When it was issued, in milliseconds since 1970 (0 for v1 tokens).
        public var issuedMs: Int64
        public var expires: Double
        public var id: String

        public init(user: String, issuedMs: Int64 = 0, expires: Double, id: String) {
            self.user = user
            self.issuedMs = issuedMs
            self.expires = expires
            self.id = id
        }
    }

    public func issue(user: String, now: Double) -> (token: String, claims: Claims) {
        let claims = Claims(user: user, issuedMs: Int64((now * 1000).rounded(.down)),
                            expires: (now + lifetimeSeconds).rounded(.down), id: Tokens.randomID())
        let body = "v2.\(claims.user).\(claims.issuedMs).\(Int(claims.expires)).\(claims.id)"
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
        let claims: Claims
        switch (parts.first, parts.count) {
        case ("v2", 6):
            guard let issued = Int64(parts[2]), let expires = Int(parts[3]) else { return .failure(.malformed) }
            claims = Claims(user: String(parts[1]), issuedMs: issued, expires: Double(expires), id: String(parts[4]))
        case ("v1", 5):
            guard let expires = Int(parts[2]) else { return .failure(.malformed) }
            claims = Claims(user: String(parts[1]), expires: Double(expires), id: String(parts[3]))
        default:
            return .failure(.malformed)
        }
        guard !claims.user.isEmpty, !claims.id.isEmpty else { return .failure(.malformed) }
        let body = parts.dropLast().joined(separator: ".")
        guard Digest.constantTimeEqual(Array(sign(body).utf8), Array(parts.last!.utf8)) else { return .failure(.badSignature) }
        guard claims.expires > now else { return .failure(.expired) }
        return .success(claims)
    }

    private func sign(_ body: String) -> String {
        Tokens.base64url(Digest.hmacSHA256(key: secret, message: Array(body.utf8)))
    }

    static func base64url(_ bytes: [UInt8]) -> String { Base64.encodeURL(bytes) }

    /// A random identifier (16 bytes, base64url).
    public static func randomID(bytes: Int = 12) -> String { base64url(Digest.randomBytes(bytes)) }
}
