import DomainSeam

/// What the accounts domain tells the other nodes (`ClusterEvents`), one type per topic, so that
/// every node's limits, revocations and profiles stay in step without reading the store.
enum AccountEvents {
    /// A log-in attempt counted as failed (the guessing limits count every node's).
    struct LoginFailed: ClusterEvent {
        static let topic = "auth.failed"
        var account: String
        var address: String
        var at: Double
    }

    /// A log-in succeeded after failures: the account's failures are forgiven everywhere.
    struct LoginSucceeded: ClusterEvent {
        static let topic = "auth.succeeded"
        var account: String
        var address: String
    }

    /// A token logged out: refused on every node until it expires.
    struct TokenRevoked: ClusterEvent {
        static let topic = "auth.revoked"
        var user: String
        var token: String
        var expires: Double
    }

    /// Every connection of a user ends but the one holding `keep` (the password changed), or all
    /// of them (`deleted`: the account is gone).
    struct ConnectionsEnded: ClusterEvent {
        static let topic = "auth.reset"
        var user: String
        var keep: String?
        var reason: String
        var deleted: Bool
    }

    /// Who sees a user's lists, or the language they read, changed.
    struct ProfileChanged: ClusterEvent {
        static let topic = "auth.profile"
        struct Privacy: Codable, Sendable {
            var list: PrivateList
            var audience: Audience
        }
        var user: String
        var privacy: [Privacy]
        /// Whether `language` is news (nil then means: none any more).
        var languageChanged: Bool
        var language: String?
    }

    /// A sign-up was let through from an address (its budget counts every node's).
    struct SignedUp: ClusterEvent {
        static let topic = "auth.signedUp"
        var address: String
        var at: Double
    }
}
