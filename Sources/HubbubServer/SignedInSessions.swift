import DomainSeam
import Synchronization

/// Every session signed in, by user: what `SignedInConnections` ends when tokens are revoked. A
/// session adds itself when it signs in and removes itself when it signs out or its connection ends.
final class SignedInSessions: SignedInConnections {
    private struct Entry {
        let session: Session
        let tokenID: String?
    }

    /// user → (session → the token it signed in with).
    private let byUser = Mutex<[String: [ObjectIdentifier: Entry]]>([:])

    func add(_ session: Session, _ identity: Identity) {
        byUser.withLock { $0[identity.user, default: [:]][ObjectIdentifier(session)] = Entry(session: session, tokenID: identity.tokenID) }
    }

    func remove(_ session: Session, user: String) {
        byUser.withLock {
            $0[user]?[ObjectIdentifier(session)] = nil
            if $0[user]?.isEmpty == true { $0[user] = nil }
        }
    }

    /// Sessions signed in (metrics, tests).
    var count: Int { byUser.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    func end(user: String, token tokenID: String, reason: String) async -> Int {
        await end(user: user, reason: reason) { $0 == tokenID }
    }

    func end(user: String, keeping keep: String?, reason: String) async -> Int {
        await end(user: user, reason: reason) { keep == nil || $0 != keep }
    }

    private func end(user: String, reason: String, _ revoked: @escaping @Sendable (String?) -> Bool) async -> Int {
        let sessions = byUser.withLock { ($0[user] ?? [:]).values.filter { revoked($0.tokenID) }.map(\.session) }
        for s in sessions { await s.revoke(user: user, reason: reason, revoked) }
        return sessions.count
    }
}
