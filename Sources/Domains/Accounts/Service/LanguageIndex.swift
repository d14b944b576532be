import Synchronization

/// The language each user reads (`profile.update {language}`), in memory: every reader of a
/// localized push is looked up. Holds only users who set one; the store has the durable truth and
/// fills it at start.
final class LanguageIndex: Sendable {
    private let tags = Mutex<[String: String]>([:])

    func language(of user: String) -> String? { tags.withLock { $0[user] } }

    /// Records `user`'s language (nil: none), after it is stored.
    func set(_ user: String, _ tag: String?) { tags.withLock { $0[user] = tag } }

    /// Replaces every user's language with what the store says (after missed updates from other nodes).
    func replace(_ all: [String: String]) { tags.withLock { $0 = all } }

    /// Users who set a language (metrics, tests).
    var count: Int { tags.withLock { $0.count } }
}
