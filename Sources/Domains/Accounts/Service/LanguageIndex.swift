import Synchronization

/// The language each user reads (`profile.update {language}`), in memory: every reader of a
/// localized push is looked up. Holds only users who set one; the store has the durable truth and
/// fills it at start.
final class LanguageIndex: Sendable {
    private struct State {
        var tags: [String: String] = [:]
        /// Moves on at each `set`; `replace` keeps what was set after its read began.
        var generation = 0
        var setAt: [String: Int] = [:]
    }

    private let state = Mutex(State())

    func language(of user: String) -> String? { state.withLock { $0.tags[user] } }

    /// Records `user`'s language (nil: none), after it is stored.
    func set(_ user: String, _ tag: String?) {
        state.withLock { s in
            s.generation += 1
            s.tags[user] = tag
            s.setAt[user] = s.generation
        }
    }

    /// Where `set` stands: taken before reading the store for `replace`.
    var mark: Int { state.withLock { $0.generation } }

    /// Replaces every user's language with what the store said (after missed updates from other
    /// nodes), read after `mark`: a language set here since is newer than the read and stays.
    func replace(_ all: [String: String], since mark: Int) {
        state.withLock { s in
            var tags = all
            for (user, at) in s.setAt where at > mark { tags[user] = s.tags[user] }
            s.tags = tags
            s.setAt = s.setAt.filter { $0.value > mark }
        }
    }

    /// Users who set a language (metrics, tests).
    var count: Int { state.withLock { $0.tags.count } }
}
