import Dispatch
import HubbubCrypto

/// Password hashing with PBKDF2-HMAC-SHA-256 (OpenSSL), run on a queue of its own: the work is
/// slow on purpose and must not hold up the cooperative pool.
public final class Passwords: Sendable {
    public let iterations: Int
    private let queue = DispatchQueue(label: "hubbub.kdf", attributes: .concurrent)

    public init(iterations: Int) { self.iterations = max(1, iterations) }

    /// A fresh salt and the derived key.
    public func hash(_ password: String) async -> (hash: [UInt8], salt: [UInt8], iterations: Int) {
        let salt = Digest.randomBytes(16)
        let iterations = self.iterations
        let key = await derive(password, salt: salt, iterations: iterations)
        return (key, salt, iterations)
    }

    /// Whether `password` matches a stored hash (compared in constant time).
    public func verify(_ password: String, hash: [UInt8], salt: [UInt8], iterations: Int) async -> Bool {
        let key = await derive(password, salt: salt, iterations: iterations)
        return Digest.constantTimeEqual(key, hash)
    }

    private func derive(_ password: String, salt: [UInt8], iterations: Int) async -> [UInt8] {
        await withCheckedContinuation { done in
            queue.async { done.resume(returning: Digest.pbkdf2SHA256(password: Array(password.utf8), salt: salt, iterations: iterations)) }
        }
    }
}
