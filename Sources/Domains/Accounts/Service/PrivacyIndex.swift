import DomainSeam
import Synchronization

/// Who hides which list (`profile.update {privacy}`), in memory for lookups on hot paths (every
/// vote's push asks). Holds only the users who hide something; the store has the durable truth and
/// fills it at start. A deleted account stays hidden where it chose to be: its contributions remain.
final class PrivacyIndex: Sendable {
    private let hidden = Mutex<[PrivateList: Set<String>]>([:])

    func hides(_ list: PrivateList, _ user: String) -> Bool {
        hidden.withLock { $0[list]?.contains(user) ?? false }
    }

    /// Records `user`'s audience for `list` (after it is stored).
    func set(_ list: PrivateList, _ user: String, _ audience: Audience) {
        hidden.withLock {
            if audience == .nobody { $0[list, default: []].insert(user) } else { $0[list]?.remove(user) }
        }
    }

    /// Replaces who hides `list` with what the store says (after missed updates from other nodes).
    func replace(_ list: PrivateList, hiddenBy users: Set<String>) {
        hidden.withLock { $0[list] = users }
    }

    /// Users hiding something, all lists together (metrics, tests).
    var count: Int { hidden.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}
