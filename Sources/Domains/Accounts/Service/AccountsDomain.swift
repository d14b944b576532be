import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import Storage

/// Accounts on the seam: `account.*`, `auth`, `profile.*`, the user tables, the `auth.*` settings,
/// and the `UserDirectory` other domains ask whether a user exists.
public struct AccountsDomain: Domain {
    public static let name = "accounts"

    public static let tokenSecret = Setting("auth.tokenSecret", default: "",
                                            help: "HMAC key of session tokens; empty: a random key kept in the database on PostgreSQL (shared by every node), else in <dataDir>/token-secret",
                                            secret: true)
    public static let tokenLifetimeHours = Setting("auth.tokenLifetimeHours", default: 720, range: 1...87_600,
                                                   help: "how long a session token is valid")
    public static let kdfIterations = Setting("auth.kdfIterations", default: 600_000, range: 1...10_000_000,
                                              help: "PBKDF2-HMAC-SHA-256 iterations for new passwords (OWASP's 600,000); a hash with fewer is redone at the next log-in (load tests may lower it)")
    public static let kdfThreads = Setting("auth.kdfThreads", default: 1, range: 1...256,
                                           help: "threads that hash passwords, at a lower priority than the live traffic")
    public static let kdfMaxQueued = Setting("auth.kdfMaxQueued", default: 64, range: 0...100_000,
                                             help: "password hashes that may wait for a thread; beyond, sign-ups and log-ins answer rate_limited with retryAfterMs")
    public static let passwordMinLength = Setting("auth.passwordMinLength", default: 8, range: 1...256,
                                                  help: "password rules: this long, a letter and a digit")

    // Guessing limits (GuessingThrottle): per account and per address, across all connections.
    public static let freeFailures = Setting("auth.freeFailures", default: 5, range: 0...1000,
                                             help: "failed log-ins an account takes before the addresses that failed on it must wait")
    public static let failureDelayMs = Setting("auth.failureDelayMs", default: 1000, range: 1...3_600_000,
                                               help: "the first wait after the free failures; it doubles with each further failure")
    public static let maxFailureDelaySeconds = Setting("auth.maxFailureDelaySeconds", default: 900, range: 1...86_400,
                                                       help: "the longest wait between evaluated guesses on one account")
    public static let failureWindowSeconds = Setting("auth.failureWindowSeconds", default: 3600, range: 1...604_800,
                                                     help: "failures are forgotten this long after an account's last one")
    public static let addressFailuresPerHour = Setting("auth.addressFailuresPerHour", default: 100, range: 1...100_000_000,
                                                       help: "failed log-ins one address (an IPv6 /64) may make per hour, over all accounts")
    public static let signupsPerAddressPerHour = Setting("auth.signupsPerAddressPerHour", default: 20, range: 1...100_000_000,
                                                         help: "sign-ups one address (an IPv6 /64) may make per hour")
    public static let maxTracked = Setting("auth.maxTracked", default: 100_000, range: 100...100_000_000,
                                           help: "entries per guessing-limit table (accounts, account-address pairs, addresses); bounds their memory")

    public static var settings: [any AnySetting] {
        [tokenSecret, tokenLifetimeHours, kdfIterations, kdfThreads, kdfMaxQueued, passwordMinLength, freeFailures, failureDelayMs, maxFailureDelaySeconds,
         failureWindowSeconds, addressFailuresPerHour, signupsPerAddressPerHour, maxTracked]
    }

    public static func migrations(_ migrator: inout SQLMigrations) { AccountSchema.register(&migrator) }

    public let accounts: AccountService

    public init(context: DomainContext) throws {
        var configuration = AccountService.Configuration()
        configuration.pbkdf2Iterations = context.settings[Self.kdfIterations]
        configuration.kdfThreads = context.settings[Self.kdfThreads]
        configuration.kdfMaxQueued = context.settings[Self.kdfMaxQueued]
        configuration.passwordMinLength = context.settings[Self.passwordMinLength]
        configuration.tokenLifetimeSeconds = Double(context.settings[Self.tokenLifetimeHours]) * 3600
        configuration.guessing.freeFailures = context.settings[Self.freeFailures]
        configuration.guessing.baseDelay = Double(context.settings[Self.failureDelayMs]) / 1000
        configuration.guessing.maxDelay = Double(context.settings[Self.maxFailureDelaySeconds])
        configuration.guessing.window = Double(context.settings[Self.failureWindowSeconds])
        configuration.guessing.addressFailuresPerHour = context.settings[Self.addressFailuresPerHour]
        configuration.guessing.maxTracked = context.settings[Self.maxTracked]
        configuration.signupsPerAddressPerHour = context.settings[Self.signupsPerAddressPerHour]
        let secret = try Self.secret(context.settings[Self.tokenSecret], dataDirectory: context.dataDirectory, store: context.store)
        accounts = try AccountService(store: context.store, secret: secret, configuration: configuration,
                                      connections: context.capabilities.resolve(SignedInConnections.self),
                                      erasure: context.capabilities.resolve(UserErasure.self),
                                      events: context.capabilities.resolve(ClusterEvents.self))
        accounts.listenToOtherNodes()
        context.capabilities.provide(UserDirectory.self, Users(accounts: accounts))
    }

    public var ops: [Op] {
        let accounts = self.accounts
        return [
            .anyone("account.signup", .auth, SignupArgs.self) { call, a throws(ProtocolError) in
                let (user, token) = try await accounts.signup(username: a.username, email: a.email, password: a.password,
                                                              confirmation: a.confirmation, from: call.session.address)
                // Signed up is logged in, as after account.login.
                let (_, claims) = try await accounts.authenticate(token)
                await call.session.signIn(claims.identity)
                return .reply(["user": user.json, "token": .string(token)])
            },
            .anyone("account.login", .auth, LoginArgs.self) { call, a throws(ProtocolError) in
                let (user, token) = try await accounts.login(a.login, password: a.password, from: call.session.address)
                let (_, claims) = try await accounts.authenticate(token)
                await call.session.signIn(claims.identity)
                return .reply(["user": user.json, "token": .string(token)])
            },
            .anyone("auth", .auth, TokenArgs.self) { call, a throws(ProtocolError) in
                let (user, claims) = try await accounts.authenticate(a.token)
                await call.session.signIn(claims.identity)
                return .reply(["user": user.json])
            },
            .user("account.logout", .auth, NoArguments.self) { c throws(ProtocolError) in
                if let claims = Tokens.Claims(await c.session.signOut()) { try await accounts.logout(claims) }
                return .reply([:])
            },
            .user("account.delete", .write, NoArguments.self) { c throws(ProtocolError) in
                _ = await c.session.signOut()
                try await accounts.delete(c.user)
                return .reply(["deleted": .string(c.user)])
            },
            .user("account.password", .auth, PasswordChangeArgs.self) { c throws(ProtocolError) in
                let session = c.session
                let token = try await accounts.changePassword(c.user, old: c.args.old, new: c.args.new, from: session.address) { claims in
                    await session.signIn(claims.identity)
                }
                return .reply(["token": .string(token)])
            },
            .user("profile.get", .read, UserArgument.self) { c throws(ProtocolError) in
                .reply(["profile": try await accounts.profile(c.args.user ?? c.user, viewer: c.user)])
            },
            .user("profile.update", .write, ProfileUpdateArgs.self) { c throws(ProtocolError) in
                if let target = c.args.user, target != c.user { throw .forbidden("you can only edit your own profile") }
                return .reply(["profile": try await accounts.updateProfile(c.user, c.args.patch)])
            },
        ]
    }

    /// The token key: from configuration; else, on PostgreSQL, the one kept in the database (every
    /// node shares it, so a token is good on all of them); else a random one kept (0600) in the
    /// data directory so tokens survive restarts.
    static func secret(_ configured: String, dataDirectory: String, store: Store) throws -> [UInt8] {
        if !configured.isEmpty { return Array(configured.utf8) }
        if store.dialect == .postgres {
            let kept = try store.readNow { db in try String.fetchOne(db, sql: "SELECT secret FROM account_secret WHERE id = 1") }
            guard let kept, let bytes = Base64.decode(kept), bytes.count >= 32 else {
                throw MissingTokenKey()
            }
            return bytes
        }
        let path = (dataDirectory as NSString).appendingPathComponent("token-secret")
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let bytes = Base64.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count >= 32 {
            return bytes
        }
        let secret = Digest.randomBytes(32)
        // A key not kept would be another one at the next start: every token issued would stop working.
        guard FileManager.default.createFile(atPath: path, contents: Data(Base64.encode(secret).utf8), attributes: [.posixPermissions: 0o600]) else {
            throw UnwritableTokenKey(path: path)
        }
        return secret
    }

    struct UnwritableTokenKey: Error, CustomStringConvertible {
        var path: String
        var description: String { "cannot write the token key to \(path)" }
    }

    struct MissingTokenKey: Error, CustomStringConvertible {
        var description: String { "the database holds no token key (table account_secret, made by migration accounts.v4)" }
    }

    struct Users: UserDirectory {
        let accounts: AccountService
        func exists(_ user: String) async -> Bool { ((try? await accounts.user(user)) ?? nil) != nil }
        func hides(_ list: PrivateList, _ user: String) -> Bool { accounts.privacy.hides(list, user) }
        func aliases(of users: [String]) async throws(ProtocolError) -> [String: String] { try await accounts.aliases(of: users) }
        func language(of user: String) -> String? { accounts.languages.language(of: user) }
    }
}

extension Tokens.Claims {
    /// Who a session is, from its token.
    var identity: Identity { Identity(user: user, tokenID: id, expires: expires) }

    /// The token a session authenticated with (nil: it had none).
    init?(_ identity: Identity?) {
        guard let identity, let id = identity.tokenID, let expires = identity.expires else { return nil }
        self.init(user: identity.user, expires: expires, id: id)
    }
}

struct SignupArgs: OpArguments {
    var username, email, password: String
    var confirmation: String?
    init(_ a: Args) throws(ProtocolError) {
        username = try a.string("username", maxLength: 64)
        email = try a.string("email", maxLength: 254)
        password = try a.string("password", maxLength: 1024)
        confirmation = try a.optionalString("passwordConfirmation", maxLength: 1024)
    }
}

struct LoginArgs: OpArguments {
    var login, password: String
    init(_ a: Args) throws(ProtocolError) {
        login = try a.string("login", maxLength: 254)
        password = try a.string("password", maxLength: 1024)
    }
}

struct PasswordChangeArgs: OpArguments {
    var old, new: String
    init(_ a: Args) throws(ProtocolError) {
        old = try a.string("old", maxLength: 1024)
        new = try a.string("new", maxLength: 1024)
    }
}

struct TokenArgs: OpArguments {
    var token: String
    init(_ a: Args) throws(ProtocolError) { token = try a.string("token", maxLength: 512) }
}

struct ProfileUpdateArgs: OpArguments {
    var user: String?
    var patch: ProfilePatch
    init(_ a: Args) throws(ProtocolError) {
        user = try a.optionalString("user", maxLength: 64)
        patch = try ProfilePatch(a)
    }
}
