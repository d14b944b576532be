import Realtime
import Storage
import Synchronization
import WebSocket

/// What domains offer each other without importing each other: a domain provides a value under a
/// protocol type when it is built, another looks it up when it needs it (so the order in which
/// domains are registered does not matter).
public final class Capabilities: Sendable {
    private let values = Mutex<[ObjectIdentifier: any Sendable]>([:])

    public init() {}

    public func provide<T>(_ type: T.Type, _ value: T) where T: Sendable {
        values.withLock { $0[ObjectIdentifier(type)] = value }
    }

    /// The value provided under `type`, if any domain provides one.
    public func resolve<T>(_ type: T.Type) -> T? {
        values.withLock { $0[ObjectIdentifier(type)] } as? T
    }
}

/// What other domains may ask about users (the accounts domain provides it): whether one exists
/// (venues add co-owners) and whom they show their activity to (`profile.update {privacy}`).
public protocol UserDirectory: Sendable {
    func exists(_ user: String) async -> Bool
    /// Whether `user` hides their `list` from everyone else (unknown users hide nothing). From
    /// memory: cheap enough for every vote's push.
    func hides(_ list: PrivateList, _ user: String) -> Bool
    /// The name shown for each of `users` that still exists: its alias, else its username. A
    /// deleted or unknown user is absent (show "deleted user", never their id).
    func aliases(of users: [String]) async throws(ProtocolError) -> [String: String]
    /// The language `user` reads (`profile.update {language}`, a BCP 47 tag), if they set one.
    /// From memory: asked for every reader of a localized push.
    func language(of user: String) -> String?
}

/// The language each connection's reader set (the core provides it, from who is signed in on
/// the connection and their profile): what a localized push (`RoomWriter.stage(_:languages:data:in:at:)`)
/// picks its version by.
public protocol ReaderLanguages: Sendable {
    /// The language of the user signed in on `member`, if any and if they set one.
    func language(of member: ConnectionID) -> String?
}

/// The lists of a user's activity a user may hide (protocol.md `privacy`).
public enum PrivateList: String, Sendable, CaseIterable {
    case checkins, votes, requests
}

/// Who sees one of a user's lists, besides the user.
public enum Audience: String, Sendable, CaseIterable {
    case everyone, nobody
}

extension UserDirectory {
    /// Throws `forbidden` when `viewer` may not see `user`'s `list`; a user always sees their own.
    public func requireVisible(_ list: PrivateList, of user: String, to viewer: String) throws(ProtocolError) {
        guard user != viewer else { return }
        if hides(list, user) {
            throw .forbidden("\(user) keeps their \(list.rawValue) private")
        }
    }
}

/// The connections signed in, as the core knows them (the core provides it). The accounts domain
/// ends them when it revokes the tokens they signed in with.
public protocol SignedInConnections: Sendable {
    /// Closes (1008, `reason`) every connection of `user` signed in with token `tokenID`; returns how many.
    @discardableResult
    func end(user: String, token tokenID: String, reason: String) async -> Int
    /// Closes (1008, `reason`) every connection signed in as `user`, except those signed in with
    /// token `keep`; returns how many.
    @discardableResult
    func end(user: String, keeping keep: String?, reason: String) async -> Int
}

/// Every domain's part of deleting an account (the core provides it from each domain's
/// `erase(user:_:)`); the accounts domain runs it inside the deletion's transaction, so the account
/// and its private data in every domain go together, durably.
public protocol UserErasure: Sendable {
    /// Rows only, in the deletion's transaction (it may run more than once).
    func erase(user: String, _ db: any SQLDatabase) throws
    /// Once the deletion is durable: memory's part.
    func erased(user: String)
}
