import DomainSeam
import Synchronization
import WebSocket

/// Every session signed in, by user: what `SignedInConnections` ends when tokens are revoked, and
/// who reads on each connection (`ReaderLanguages`, with the users' languages from `users`). A
/// session adds itself when it signs in and removes itself when it signs out or its connection ends.
final class SignedInSessions: SignedInConnections, ReaderLanguages {
    private struct Entry {
        let session: Session
        let tokenID: String?
    }

    /// user → (session → the token it signed in with).
    private let byUser = Mutex<[String: [ObjectIdentifier: Entry]]>([:])
    /// connection → the user signed in on it.
    private let byMember = Mutex<[ConnectionID: String]>([:])
    /// Where users' languages come from (the accounts domain's directory, once it is built).
    private let capabilities: Capabilities

    init(capabilities: Capabilities) { self.capabilities = capabilities }

    func add(_ session: Session, _ identity: Identity) {
        byUser.withLock { $0[identity.user, default: [:]][ObjectIdentifier(session)] = Entry(session: session, tokenID: identity.tokenID) }
        byMember.withLock { $0[session.member] = identity.user }
    }

    func remove(_ session: Session, user: String) {
        byUser.withLock {
            $0[user]?[ObjectIdentifier(session)] = nil
            if $0[user]?.isEmpty == true { $0[user] = nil }
        }
        byMember.withLock { if $0[session.member] == user { $0[session.member] = nil } }
    }

    func language(of member: ConnectionID) -> String? {
        guard let user = byMember.withLock({ $0[member] }) else { return nil }
        return capabilities.resolve(UserDirectory.self)?.language(of: user)
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
