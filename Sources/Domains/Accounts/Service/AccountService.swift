import DomainSeam
import Foundation
import Realtime
import Storage

/// Accounts: sign-up, log-in, tokens, log-out, deletion and profiles, stored durably.
public actor AccountService {
    /// Rules and settings for accounts.
    public struct Configuration: Sendable {
        public var passwordMinLength = 8
        public var passwordMaxLength = 256
        public var tokenLifetimeSeconds: Double = 30 * 24 * 3600
        /// OWASP's figure for PBKDF2-HMAC-SHA-256 (2023); older hashes are upgraded at log-in.
        public var pbkdf2Iterations = 600_000
        /// Threads that hash passwords, and how many hashes may wait for them (`auth.kdfThreads`,
        /// `auth.kdfMaxQueued`); beyond that, sign-ups and log-ins answer `rate_limited`.
        public var kdfThreads = 1
        public var kdfMaxQueued = 64
        /// Password guessing limits across all connections.
        public var guessing = GuessingThrottle.Configuration()
        /// Sign-ups one address may make per hour.
        public var signupsPerAddressPerHour = 20
        public init() {}
    }

    /// The public face of a user.
    public struct User: Sendable, Equatable {
        public var id: String
        public var username: String

        public var json: JSON { ["id": .string(id), "username": .string(username)] }
    }

    /// The connections signed in (ended when their token is revoked); nil in tests of this service alone.
    private let connections: (any SignedInConnections)?
    /// The other domains' part of deleting an account; nil in tests of this service alone.
    private let erasure: (any UserErasure)?
    /// The other nodes (several nodes on PostgreSQL; nil on one node): what this node learns about
    /// guesses, revocations and profiles it tells them, so limits and revocations hold across nodes.
    private let events: (any ClusterEvents)?
    private var throttle: GuessingThrottle
    private var signups: AddressBudget
    /// Who hides which list, for other domains' hot paths.
    nonisolated let privacy = PrivacyIndex()
    nonisolated let languages = LanguageIndex()

    private let store: Store
    private let tokens: Tokens
    private let passwords: Passwords
    private let configuration: Configuration
    /// Log-outs of tokens that have not expired yet: token id → when the token expires. An expired
    /// token is refused before this is looked at, so expired entries are dropped (in memory and
    /// on disk) whenever the map has doubled since the last time: memory follows the log-outs of
    /// one token lifetime, not of all time.
    private var revoked: [String: Double] = [:]
    private var pruneAt = 1024

    public init(store: Store, secret: [UInt8], configuration: Configuration, connections: (any SignedInConnections)? = nil,
                erasure: (any UserErasure)? = nil, events: (any ClusterEvents)? = nil) throws {
        self.erasure = erasure
        self.events = events
        self.store = store
        self.configuration = configuration
        self.connections = connections
        throttle = GuessingThrottle(configuration: configuration.guessing)
        signups = AddressBudget(perHour: configuration.signupsPerAddressPerHour, maxTracked: configuration.guessing.maxTracked)
        tokens = Tokens(secret: secret, lifetimeSeconds: configuration.tokenLifetimeSeconds)
        passwords = Passwords(iterations: configuration.pbkdf2Iterations, threads: configuration.kdfThreads,
                              maxQueued: configuration.kdfMaxQueued)
        let kept = try store.readNow { db in try Self.kept(db) }
        revoked = kept.revoked
        pruneAt = max(1024, revoked.count * 2)
        for (list, users) in kept.hiding { for user in users { privacy.set(list, user, .nobody) } }
        for (user, tag) in kept.reading { languages.set(user, tag) }
    }

    /// What this service keeps in memory in step with the store: log-outs of live tokens, who
    /// hides which list, who reads which language.
    private struct Kept: Sendable {
        var revoked: [String: Double]
        var hiding: [(PrivateList, [String])]
        var reading: [(String, String)]
    }

    private static func kept(_ db: any SQLDatabase) throws -> Kept {
        let now = Date().timeIntervalSince1970
        let rows = try SQLRow.fetchAll(db, sql: "SELECT token_id, expires_at FROM revoked_token WHERE expires_at > ?", arguments: [now])
            .map { ($0["token_id"] as String, $0["expires_at"] as Double) }
        let hiding = try PrivateList.allCases.map { list in
            (list, try String.fetchAll(db, sql: "SELECT id FROM user WHERE privacy_\(list.rawValue) = ?", arguments: [Audience.nobody.rawValue]))
        }
        let reading = try SQLRow.fetchAll(db, sql: "SELECT id, language FROM user WHERE language IS NOT NULL AND deleted_at IS NULL")
            .map { ($0["id"] as String, $0["language"] as String) }
        return Kept(revoked: Dictionary(rows, uniquingKeysWith: max), hiding: hiding, reading: reading)
    }

    // MARK: Several nodes

    /// The events this service hears from the other nodes (call once, after `init`).
    public nonisolated func listenToOtherNodes() {
        guard let events else { return }
        events.subscribe(AccountEvents.LoginFailed.self) { e in Task { await self.heard(e) } }
        events.subscribe(AccountEvents.LoginSucceeded.self) { e in Task { await self.heard(e) } }
        events.subscribe(AccountEvents.TokenRevoked.self) { e in Task { await self.heard(e) } }
        events.subscribe(AccountEvents.ConnectionsEnded.self) { e in Task { await self.heard(e) } }
        events.subscribe(AccountEvents.ProfileChanged.self) { e in Task { await self.heard(e) } }
        events.subscribe(AccountEvents.SignedUp.self) { e in Task { await self.heard(e) } }
        events.onResync { Task { await self.reloadKept() } }
    }

    private func heard(_ e: AccountEvents.LoginFailed) {
        throttle.failed(account: e.account, address: e.address, now: e.at)
    }

    private func heard(_ e: AccountEvents.SignedUp) {
        signups.spend(e.address, now: e.at)
    }

    private func heard(_ e: AccountEvents.LoginSucceeded) {
        throttle.succeeded(account: e.account, address: e.address)
    }

    private func heard(_ e: AccountEvents.TokenRevoked) async {
        revoked[e.token] = e.expires
        await connections?.end(user: e.user, token: e.token, reason: "token revoked (logged out)")
    }

    private func heard(_ e: AccountEvents.ConnectionsEnded) async {
        if e.deleted { languages.set(e.user, nil) }
        await connections?.end(user: e.user, keeping: e.keep, reason: e.reason)
    }

    private func heard(_ e: AccountEvents.ProfileChanged) {
        for change in e.privacy { privacy.set(change.list, e.user, change.audience) }
        if e.languageChanged { languages.set(e.user, e.language) }
    }

    /// This node may have missed events: what it keeps in memory is read again from the store.
    private func reloadKept() async {
        // What is set here while the read runs is newer than what it reads, and stays (a language
        // set just after start was once undone by the read the event connection's start made).
        let privacyMark = privacy.mark, languagesMark = languages.mark
        guard let kept = try? await store.read({ db in try Self.kept(db) }) else { return }
        // Merged, not replaced: a log-out made here while the read ran is not in what it read.
        revoked.merge(kept.revoked) { max($0, $1) }
        for (list, users) in kept.hiding {
            let hidden = Set(users)
            privacy.replace(list, hiddenBy: hidden, since: privacyMark)
        }
        languages.replace(Dictionary(kept.reading, uniquingKeysWith: { a, _ in a }), since: languagesMark)
    }

    /// Revoked tokens remembered (tests and metrics).
    public var revokedCount: Int { revoked.count }

    // MARK: Sign-up and log-in

    /// Creates an account; `address` is where the request came from (sign-ups per address are limited).
    public func signup(username: String, email: String, password: String, confirmation: String?,
                       from address: String) async throws(ProtocolError) -> (User, String) {
        try Validation.username(username)
        try Validation.email(email)
        try Validation.password(password, min: configuration.passwordMinLength, max: configuration.passwordMaxLength)
        if let confirmation, confirmation != password { throw .badRequest("passwordConfirmation: the passwords don't match") }
        let source = AddressBudget.key(address), now = Date().timeIntervalSince1970
        if let wait = signups.wait(source, now: now) {
            throw Self.rateLimited("too many sign-ups from your address", wait)
        }
        let slot = try kdfSlot()
        signups.spend(source, now: now)
        events?.publish(AccountEvents.SignedUp(address: source, at: now))
        let (hash, salt, iterations) = await passwords.hash(password, in: slot)
        let id = "u" + Tokens.randomID(bytes: 9)
        let user = User(id: id, username: username)
        do {
            try await store.write { db in
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM user WHERE username_key = ?", arguments: [username.lowercased()]) == true {
                    throw ProtocolError.conflict("username \(username) is already taken")
                }
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM user WHERE email_key = ?", arguments: [email.lowercased()]) == true {
                    throw ProtocolError.conflict("email \(email) is already taken")
                }
                try db.execute(sql: """
                    INSERT INTO user (id, username, username_key, email, email_key, password_hash, password_salt,
                                      password_iterations, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, username, username.lowercased(), email, email.lowercased(), Data(hash), Data(salt), iterations, now])
            }
        } catch let e as ProtocolError {
            throw e
        } catch {
            throw ProtocolError(.unavailable, "could not save the account")
        }
        return (user, tokens.issue(user: id, now: now).token)
    }

    /// Logs in by username or email from `address`, within the guessing limits (`GuessingThrottle`):
    /// a refused attempt answers `rate_limited` with the wait, and its password is not checked.
    public func login(_ login: String, password: String, from address: String) async throws(ProtocolError) -> (User, String) {
        let found = try await credentials(login: login)
        // The same answer for an unknown login and a wrong password (UC1 3a): nothing to probe. An
        // unknown login is throttled under its own name, like an account, so nothing differs there either.
        let wrong = ProtocolError.unauthorized("wrong username/email or password")
        let account = found?.id ?? "?" + login.lowercased()
        guard try await attempt(account: account, password: password, from: address, against: found) else { throw wrong }
        let user = User(id: found!.id, username: found!.username)
        if found!.iterations < passwords.iterations {
            let stored = found!
            Task { await upgrade(stored, password: password) }
        }
        return (user, tokens.issue(user: user.id, now: Date().timeIntervalSince1970).token)
    }

    /// A stored password: what a log-in checks.
    private struct Credentials: Sendable {
        var id, username: String
        var hash, salt: [UInt8]
        var iterations: Int
    }

    private func credentials(login: String? = nil, user: String? = nil) async throws(ProtocolError) -> Credentials? {
        let key = login?.lowercased(), id = user
        do {
            return try await store.read { db in
                let sql = """
                    SELECT id, username, password_hash, password_salt, password_iterations FROM user
                    WHERE \(id != nil ? "id = ?" : "(username_key = ? OR email_key = ?)") AND deleted_at IS NULL
                    """
                let arguments: SQLArguments = id != nil ? [id] : [key, key]
                guard let row = try SQLRow.fetchOne(db, sql: sql, arguments: arguments),
                      let hash = row["password_hash"] as Data?, let salt = row["password_salt"] as Data?,
                      let iterations = row["password_iterations"] as Int? else { return nil }
                return Credentials(id: row["id"], username: row["username"], hash: Array(hash), salt: Array(salt), iterations: iterations)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
    }

    /// Checks `password` against `stored` (nil: no such account, the time is spent all the same)
    /// within the guessing limits. The attempt counts as failed until it succeeds, so attempts made
    /// at once over many connections cannot slip past the limits while the hashes are computed.
    private func attempt(account: String, password: String, from address: String, against stored: Credentials?) async throws(ProtocolError) -> Bool {
        if let refusal = throttle.check(account: account, address: address, now: Date().timeIntervalSince1970) {
            throw Self.rateLimited(refusal.rule == .address ? "too many failed log-ins from your address"
                                                            : "too many failed log-ins for this account", refusal.retryAfter)
        }
        // Refused before it counts as a guess: a full pool is the server's state, not the guesser's.
        let slot = try kdfSlot()
        let now = Date().timeIntervalSince1970
        throttle.failed(account: account, address: address, now: now)
        events?.publish(AccountEvents.LoginFailed(account: account, address: address, at: now))
        guard let stored else {
            _ = await passwords.hash(password, in: slot) // spend the same time as a real check
            return false
        }
        guard await passwords.verify(password, hash: stored.hash, salt: stored.salt, iterations: stored.iterations, in: slot) else { return false }
        throttle.succeeded(account: account, address: address)
        events?.publish(AccountEvents.LoginSucceeded(account: account, address: address))
        return true
    }

    /// A place in the password-hashing pool, or `rate_limited` while it is full.
    private func kdfSlot() throws(ProtocolError) -> Passwords.Slot {
        do { return try passwords.admit() } catch {
            throw ProtocolError(.rateLimited, "the server is busy checking passwords; try again shortly", retryAfterMs: error.retryAfterMs)
        }
    }

    /// Hashes the password of a log-in that just succeeded with today's iterations, when it was
    /// hashed with fewer: stored only if the password has not changed since (it was read), and
    /// skipped while the pool is full (the next log-in tries again).
    private func upgrade(_ stored: Credentials, password: String) async {
        guard let slot = try? passwords.admit() else { return }
        let (hash, salt, iterations) = await passwords.hash(password, in: slot)
        do {
            try await store.write { db in
                try db.execute(sql: """
                    UPDATE user SET password_hash = ?, password_salt = ?, password_iterations = ?
                    WHERE id = ? AND password_hash = ? AND deleted_at IS NULL
                    """, arguments: [Data(hash), Data(salt), iterations, stored.id, Data(stored.hash)])
            }
        } catch {
            // Kept as it was; the next log-in tries again.
        }
    }

    static func rateLimited(_ message: String, _ seconds: Double) -> ProtocolError {
        ProtocolError(.rateLimited, message, retryAfterMs: max(1, Int((seconds * 1000).rounded(.up))))
    }

    /// Checks a token for `auth`: signature, expiry, revocation, and that the user still exists.
    public func authenticate(_ token: String) async throws(ProtocolError) -> (User, Tokens.Claims) {
        let claims: Tokens.Claims
        switch tokens.verify(token, now: Date().timeIntervalSince1970) {
        case .success(let c): claims = c
        case .failure(.expired): throw .unauthorized("token expired")
        case .failure: throw .unauthorized("invalid token")
        }
        guard revoked[claims.id] == nil else { throw .unauthorized("token was revoked (logged out)") }
        let found: (User, Int64)?, revokedElsewhere: Bool
        do {
            (found, revokedElsewhere) = try await store.read { db in
                let user = try SQLRow.fetchOne(db, sql: "SELECT id, username, tokens_valid_after FROM user WHERE id = ? AND deleted_at IS NULL",
                                               arguments: [claims.user])
                    .map { (User(id: $0["id"], username: $0["username"]), $0["tokens_valid_after"] as Int64) }
                // A log-out on another node is durable before it is acknowledged, but its event may
                // not have reached this node yet: the store decides.
                let revoked = try db.fetchOne(sql: "SELECT token_id FROM revoked_token WHERE token_id = ?", arguments: [claims.id]) != nil
                return (user, revoked)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
        if revokedElsewhere {
            revoked[claims.id] = claims.expires
            throw .unauthorized("token was revoked (logged out)")
        }
        guard let (user, validAfter) = found else { throw .unauthorized("account no longer exists") }
        guard claims.issuedMs >= validAfter else { throw .unauthorized("token was revoked (the password changed)") }
        return (user, claims)
    }

    /// Revokes a token (log-out), durably, then ends every connection still signed in with it.
    public func logout(_ claims: Tokens.Claims) async throws(ProtocolError) {
        try await revoke(claims)
        events?.publish(AccountEvents.TokenRevoked(user: claims.user, token: claims.id, expires: claims.expires))
        await connections?.end(user: claims.user, token: claims.id, reason: "token revoked (logged out)")
    }

    private func revoke(_ claims: Tokens.Claims) async throws(ProtocolError) {
        revoked[claims.id] = claims.expires
        let now = Date().timeIntervalSince1970
        let prune = revoked.count >= pruneAt
        if prune {
            revoked = revoked.filter { $0.value > now }
            pruneAt = max(1024, revoked.count * 2)
        }
        do {
            try await store.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO revoked_token (token_id, expires_at) VALUES (?, ?)",
                               arguments: [claims.id, claims.expires])
                if prune { try db.execute(sql: "DELETE FROM revoked_token WHERE expires_at <= ?", arguments: [now]) }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not record the log-out")
        }
    }

    /// Deletes an account: personal data removed, the row kept (anonymised) so contributions
    /// that refer to it stay consistent, and every domain's private data about the user erased in
    /// the same transaction (`UserErasure`); every token of the user stops working, and every
    /// connection signed in as the user is ended.
    public func delete(_ userID: String) async throws(ProtocolError) {
        let erasure = self.erasure
        do {
            try await store.write { db in
                try db.execute(sql: """
                    UPDATE user SET username = 'deleted user', username_key = 'deleted:' || id, email = NULL, email_key = NULL,
                        password_hash = NULL, password_salt = NULL, password_iterations = NULL, alias = NULL,
                        spotify = NULL, facebook = NULL, twitter = NULL, favorite_artists = '[]', favorite_genres = '[]',
                        language = NULL, deleted_at = ? WHERE id = ? AND deleted_at IS NULL
                    """, arguments: [Date().timeIntervalSince1970, userID])
                try erasure?.erase(user: userID, db)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not delete the account")
        }
        erasure?.erased(user: userID)
        languages.set(userID, nil)
        events?.publish(AccountEvents.ConnectionsEnded(user: userID, keep: nil, reason: "account deleted", deleted: true))
        await connections?.end(user: userID, keeping: nil, reason: "account deleted")
    }

    /// Changes the password of `userID` after checking `old` (within the guessing limits, from
    /// `address`): every token issued before is revoked, durably; the caller's connection signs in
    /// with a fresh token (`signIn`), then every other connection of the user is ended. Returns
    /// the fresh token.
    public func changePassword(_ userID: String, old: String, new: String, from address: String,
                               signIn: @Sendable (Tokens.Claims) async -> Void) async throws(ProtocolError) -> String {
        try Validation.password(new, min: configuration.passwordMinLength, max: configuration.passwordMaxLength, field: "new")
        let stored = try await credentials(user: userID)
        guard try await attempt(account: userID, password: old, from: address, against: stored) else {
            throw .unauthorized("old: wrong password")
        }
        let (hash, salt, iterations) = await passwords.hash(new, in: try kdfSlot())
        // The fresh token is issued after the cut, so it alone survives it.
        let cut = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        do {
            try await store.write { db in
                try db.execute(sql: """
                    UPDATE user SET password_hash = ?, password_salt = ?, password_iterations = ?, tokens_valid_after = ?
                    WHERE id = ? AND deleted_at IS NULL
                    """, arguments: [Data(hash), Data(salt), iterations, cut, userID])
            }
        } catch {
            throw ProtocolError(.unavailable, "could not save the password")
        }
        let fresh = tokens.issue(user: userID, now: max(Date().timeIntervalSince1970, Double(cut) / 1000))
        await signIn(fresh.claims)
        events?.publish(AccountEvents.ConnectionsEnded(user: userID, keep: fresh.claims.id, reason: "token revoked (the password changed)",
                                                        deleted: false))
        await connections?.end(user: userID, keeping: fresh.claims.id, reason: "token revoked (the password changed)")
        return fresh.token
    }

    // MARK: Profiles

    public func user(_ id: String) async throws(ProtocolError) -> User? {
        do {
            return try await store.read { db in
                try SQLRow.fetchOne(db, sql: "SELECT id, username FROM user WHERE id = ? AND deleted_at IS NULL", arguments: [id])
                    .map { User(id: $0["id"], username: $0["username"]) }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
    }

    /// A profile as protocol.md shows it, to `viewer`: the user's own includes their privacy settings.
    public func profile(_ id: String, viewer: String? = nil) async throws(ProtocolError) -> JSON {
        let found: JSON?
        let own = viewer == nil || viewer == id
        do {
            found = try await store.read { db in
                guard let row = try SQLRow.fetchOne(db, sql: """
                    SELECT id, username, alias, spotify, facebook, twitter, favorite_artists, favorite_genres,
                           privacy_checkins, privacy_votes, privacy_requests, language
                    FROM user WHERE id = ? AND deleted_at IS NULL
                    """, arguments: [id]) else { return nil }
                func list(_ column: String) -> JSON {
                    let text: String = row[column] ?? "[]"
                    return (try? JSONParser.parse(Array(text.utf8))) ?? []
                }
                func optional(_ column: String) -> JSON { (row[column] as String?).map { .string($0) } ?? .null }
                let username: String = row["username"]
                var fields: [(String, JSON)] = [
                    ("id", .string(row["id"])), ("username", .string(username)), ("alias", .string(row["alias"] ?? username)),
                    ("spotify", optional("spotify")), ("facebook", optional("facebook")), ("twitter", optional("twitter")),
                    ("favoriteArtists", list("favorite_artists")), ("favoriteGenres", list("favorite_genres"))]
                if own {
                    fields.append(("language", optional("language")))
                    fields.append(("privacy", .object(PrivateList.allCases.map { ($0.rawValue, .string(row["privacy_\($0.rawValue)"])) })))
                }
                return .object(fields)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
        guard let found else { throw .notFound("no user \(id)") }
        return found
    }

    /// The alias (else the username) of each of `users` that exists and is not deleted.
    public func aliases(of users: [String]) async throws(ProtocolError) -> [String: String] {
        let unique = Array(Set(users))
        guard !unique.isEmpty else { return [:] }
        do {
            return try await store.read { db in
                var names: [String: String] = [:]
                // In chunks: SQLite caps the parameters of one statement.
                for start in stride(from: 0, to: unique.count, by: 500) {
                    let chunk = Array(unique[start..<min(unique.count, start + 500)])
                    let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                    for row in try SQLRow.fetchAll(db, sql: """
                        SELECT id, COALESCE(alias, username) AS name FROM user WHERE id IN (\(marks)) AND deleted_at IS NULL
                        """, arguments: SQLArguments(chunk)) {
                        names[row["id"]] = row["name"]
                    }
                }
                return names
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
    }

    /// Updates the caller's own profile with the fields given.
    public func updateProfile(_ id: String, _ patch: ProfilePatch) async throws(ProtocolError) -> JSON {
        var sets: [String] = []
        var values: [SQLValue] = []
        for (column, value) in patch.links {
            sets.append("\(column) = ?")
            values.append(value.sqlValue)
        }
        for (column, list) in patch.favorites {
            sets.append("\(column) = ?")
            values.append(JSON.array(list.map { .string($0) }).encoded.sqlValue)
        }
        if let alias = patch.alias {
            sets.append("alias = ?")
            values.append(alias.sqlValue)
        }
        if let language = patch.language {
            sets.append("language = ?")
            values.append(language.sqlValue)
        }
        for (list, audience) in patch.privacy {
            sets.append("privacy_\(list.rawValue) = ?")
            values.append(audience.rawValue.sqlValue)
        }
        let audiences = patch.privacy, language = patch.language
        let sql = "UPDATE user SET \(sets.joined(separator: ", ")) WHERE id = ? AND deleted_at IS NULL"
        let arguments = SQLArguments(values + [id.sqlValue])
        do {
            try await store.write { db in try db.execute(sql: sql, arguments: arguments) }
        } catch {
            throw ProtocolError(.unavailable, "could not save the profile")
        }
        for (list, audience) in audiences { privacy.set(list, id, audience) }
        if let language { languages.set(id, language) }
        if !audiences.isEmpty || language != nil {
            events?.publish(AccountEvents.ProfileChanged(user: id, privacy: audiences.map { .init(list: $0.0, audience: $0.1) },
                                                         languageChanged: language != nil, language: language ?? nil))
        }
        return try await profile(id)
    }
}
