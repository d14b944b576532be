import DomainSeam
import Synchronization

/// Who hides which list (`profile.update {privacy}`), in memory for lookups on hot paths (every
/// vote's push asks). Holds only the users who hide something; the store has the durable truth and
/// fills it at start. A deleted account stays hidden where it chose to be: its contributions remain.
final class PrivacyIndex: Sendable {
    private struct State {
        var hidden: [PrivateList: Set<String>] = [:]
        /// Moves on at each `set`; `replace` keeps what was set after its read began.
        var generation = 0
        var setAt: [PrivateList: [String: Int]] = [:]
    }

    private let state = Mutex(State())

    func hides(_ list: PrivateList, _ user: String) -> Bool {
        state.withLock { $0.hidden[list]?.contains(user) ?? false }
    }

    /// Records `user`'s audience for `list` (after it is stored).
    func set(_ list: PrivateList, _ user: String, _ audience: Audience) {
        state.withLock { s in
            s.generation += 1
            if audience == .nobody { s.hidden[list, default: []].insert(user) } else { s.hidden[list]?.remove(user) }
            s.setAt[list, default: [:]][user] = s.generation
        }
    }

    /// Where `set` stands: taken before reading the store for `replace`.
    var mark: Int { state.withLock { $0.generation } }

    /// Replaces who hides `list` with what the store said (after missed updates from other nodes),
    /// read after `mark`: a choice made here since is newer than the read and stays.
    func replace(_ list: PrivateList, hiddenBy users: Set<String>, since mark: Int) {
        state.withLock { s in
            var hidden = users
            for (user, at) in s.setAt[list] ?? [:] where at > mark {
                if s.hidden[list]?.contains(user) ?? false { hidden.insert(user) } else { hidden.remove(user) }
            }
            s.hidden[list] = hidden
            s.setAt[list] = (s.setAt[list] ?? [:]).filter { $0.value > mark }
        }
    }

    /// Users hiding something, all lists together (metrics, tests).
    var count: Int { state.withLock { $0.hidden.values.reduce(0) { $0 + $1.count } } }
}
