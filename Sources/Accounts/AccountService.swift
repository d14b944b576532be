import Foundation
import GRDB
import Realtime
import Storage

/// Accounts: sign-up, log-in, tokens, log-out, deletion and profiles, stored durably.
public actor AccountService {
    /// Rules and settings for accounts.
    public struct Configuration: Sendable {
        public var passwordMinLength = 8
        public var passwordMaxLength = 256
        public var tokenLifetimeSeconds: Double = 30 * 24 * 3600
        public var pbkdf2Iterations = 100_000
        public init() {}
    }

    /// The public face of a user.
    public struct User: Sendable, Equatable {
        public var id: String
        public var username: String

        public var json: JSON { ["id": .string(id), "username": .string(username)] }
    }

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

    public init(store: Store, secret: [UInt8], configuration: Configuration) throws {
        self.store = store
        self.configuration = configuration
        tokens = Tokens(secret: secret, lifetimeSeconds: configuration.tokenLifetimeSeconds)
        passwords = Passwords(iterations: configuration.pbkdf2Iterations)
        let now = Date().timeIntervalSince1970
        let rows = try store.readNow { db in
            try Row.fetchAll(db, sql: "SELECT token_id, expires_at FROM revoked_token WHERE expires_at > ?", arguments: [now])
                .map { ($0["token_id"] as String, $0["expires_at"] as Double) }
        }
        revoked = Dictionary(rows, uniquingKeysWith: max)
        pruneAt = max(1024, revoked.count * 2)
    }

    /// Revoked tokens remembered (tests and metrics).
    public var revokedCount: Int { revoked.count }

    // MARK: Sign-up and log-in

    public func signup(username: String, email: String, password: String, confirmation: String?) async throws(ProtocolError) -> (User, String) {
        try Validation.username(username)
        try Validation.email(email)
        try Validation.password(password, min: configuration.passwordMinLength, max: configuration.passwordMaxLength)
        if let confirmation, confirmation != password { throw .badRequest("passwordConfirmation: the passwords don't match") }
        let (hash, salt, iterations) = await passwords.hash(password)
        let id = "u" + Tokens.randomID(bytes: 9)
        let now = Date().timeIntervalSince1970
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

    /// Logs in by username or email.
    public func login(_ login: String, password: String) async throws(ProtocolError) -> (User, String) {
        let key = login.lowercased()
        struct Credentials: Sendable { var id, username: String; var hash, salt: [UInt8]; var iterations: Int }
        let found: Credentials?
        do {
            found = try await store.read { db in
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT id, username, password_hash, password_salt, password_iterations FROM user
                    WHERE (username_key = ? OR email_key = ?) AND deleted_at IS NULL
                    """, arguments: [key, key]),
                    let hash = row["password_hash"] as Data?, let salt = row["password_salt"] as Data?,
                    let iterations = row["password_iterations"] as Int? else { return nil }
                return Credentials(id: row["id"], username: row["username"], hash: Array(hash), salt: Array(salt), iterations: iterations)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
        // The same answer for an unknown login and a wrong password (UC1 3a): nothing to probe.
        let wrong = ProtocolError.unauthorized("wrong username/email or password")
        guard let row = found else {
            _ = await passwords.hash(password) // spend the same time as a real check
            throw wrong
        }
        let hash = row.hash, salt = row.salt, iterations = row.iterations
        guard await passwords.verify(password, hash: hash, salt: salt, iterations: iterations) else { throw wrong }
        let user = User(id: row.id, username: row.username)
        return (user, tokens.issue(user: user.id, now: Date().timeIntervalSince1970).token)
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
        guard let user = try await user(claims.user) else { throw .unauthorized("account no longer exists") }
        return (user, claims)
    }

    /// Revokes a token (log-out).
    public func logout(_ claims: Tokens.Claims) async throws(ProtocolError) {
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
    /// that refer to it stay consistent; every token of the user stops working.
    public func delete(_ userID: String) async throws(ProtocolError) {
        do {
            try await store.write { db in
                try db.execute(sql: """
                    UPDATE user SET username = 'deleted user', username_key = 'deleted:' || id, email = NULL, email_key = NULL,
                        password_hash = NULL, password_salt = NULL, password_iterations = NULL,
                        spotify = NULL, facebook = NULL, twitter = NULL, favorite_artists = '[]', favorite_genres = '[]',
                        deleted_at = ? WHERE id = ? AND deleted_at IS NULL
                    """, arguments: [Date().timeIntervalSince1970, userID])
            }
        } catch {
            throw ProtocolError(.unavailable, "could not delete the account")
        }
    }

    // MARK: Profiles

    public func user(_ id: String) async throws(ProtocolError) -> User? {
        do {
            return try await store.read { db in
                try Row.fetchOne(db, sql: "SELECT id, username FROM user WHERE id = ? AND deleted_at IS NULL", arguments: [id])
                    .map { User(id: $0["id"], username: $0["username"]) }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
    }

    /// A profile as protocol.md shows it.
    public func profile(_ id: String) async throws(ProtocolError) -> JSON {
        let found: JSON?
        do {
            found = try await store.read { db in
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT id, username, spotify, facebook, twitter, favorite_artists, favorite_genres
                    FROM user WHERE id = ? AND deleted_at IS NULL
                    """, arguments: [id]) else { return nil }
                func list(_ column: String) -> JSON {
                    let text: String = row[column] ?? "[]"
                    return (try? JSONParser.parse(Array(text.utf8))) ?? []
                }
                func optional(_ column: String) -> JSON { (row[column] as String?).map { .string($0) } ?? .null }
                return ["id": .string(row["id"]), "username": .string(row["username"]), "spotify": optional("spotify"),
                        "facebook": optional("facebook"), "twitter": optional("twitter"),
                        "favoriteArtists": list("favorite_artists"), "favoriteGenres": list("favorite_genres")]
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read accounts")
        }
        guard let found else { throw .notFound("no user \(id)") }
        return found
    }

    /// Updates the caller's own profile with the fields given.
    public func updateProfile(_ id: String, args: Args) async throws(ProtocolError) -> JSON {
        var sets: [String] = []
        var values: [DatabaseValueConvertible?] = []
        for (field, column) in [("spotify", "spotify"), ("facebook", "facebook"), ("twitter", "twitter")] where args.value[field] != nil {
            let v = try args.optionalString(field, maxLength: 100)
            sets.append("\(column) = ?")
            values.append(v?.isEmpty == true ? nil : v)
        }
        for (field, column) in [("favoriteArtists", "favorite_artists"), ("favoriteGenres", "favorite_genres")] where args.value[field] != nil {
            let list = try args.optionalStringArray(field, maxCount: 200, maxLength: 200) ?? []
            sets.append("\(column) = ?")
            values.append(JSON.array(list.map { .string($0) }).encoded)
        }
        guard !sets.isEmpty else {
            throw .badRequest("nothing to update: give spotify, facebook, twitter, favoriteArtists or favoriteGenres")
        }
        let sql = "UPDATE user SET \(sets.joined(separator: ", ")) WHERE id = ? AND deleted_at IS NULL"
        let arguments = StatementArguments(values + [id])
        do {
            try await store.write { db in try db.execute(sql: sql, arguments: arguments) }
        } catch {
            throw ProtocolError(.unavailable, "could not save the profile")
        }
        return try await profile(id)
    }
}
