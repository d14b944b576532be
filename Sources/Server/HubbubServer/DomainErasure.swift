import DomainSeam
import Storage
import Synchronization

/// `UserErasure` for the accounts domain: each registered domain's `erase(user:_:)`, in
/// registration order. Provided before the domains are built (they resolve capabilities when
/// built), filled in once they are.
final class DomainErasure: UserErasure {
    private let domains = Mutex<[any Domain]>([])

    func attach(_ built: [any Domain]) { domains.withLock { $0 = built } }

    func erase(user: String, _ db: any SQLDatabase) throws {
        for domain in domains.withLock({ $0 }) { try domain.erase(user: user, db) }
    }

    func erased(user: String) {
        for domain in domains.withLock({ $0 }) { domain.erased(user: user) }
    }
}
