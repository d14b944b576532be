import Foundation
import HubbubCrypto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Password hashing with PBKDF2-HMAC-SHA-256 (OpenSSL) on a bounded pool of threads of its own.
///
/// The work is slow on purpose (OWASP's 600,000 iterations: a third of a second of one core), so
/// it must neither hold up the cooperative pool nor grow without bound: `threads` workers take the
/// jobs in order, at most `maxQueued` wait, and a job beyond that is refused at once (`Busy`, with
/// the wait the queue ahead means) instead of making everyone's log-in slower. The workers run at
/// a lower scheduling priority, so that hashing yields the cores to the live traffic.
public final class Passwords: Sendable {
    /// The pool is full: try again after about `retryAfterMs`.
    public struct Busy: Error, Sendable {
        public var retryAfterMs: Int
    }

    /// A place in the pool, taken before the work is decided on (so that a caller can refuse a
    /// request without side effects), used by exactly one `hash` or `verify`.
    public final class Slot: Sendable {
        private let pool: Pool
        private let used = Atomic<Bool>(false)

        fileprivate init(pool: Pool) { self.pool = pool }

        /// The pool, once: the finished job gives the place back.
        fileprivate func use() -> Pool {
            precondition(!used.exchange(true, ordering: .acquiringAndReleasing), "a KDF slot used twice")
            return pool
        }

        /// A place taken and never used (the request failed first) is given back.
        deinit { if !used.load(ordering: .acquiring) { pool.release() } }
    }

    /// Iterations for new hashes; older hashes with fewer are upgraded at the next log-in.
    public let iterations: Int
    private let pool: Pool

    public init(iterations: Int, threads: Int = 1, maxQueued: Int = 64) {
        self.iterations = max(1, iterations)
        pool = Pool(threads: max(1, threads), maxQueued: max(0, maxQueued))
    }

    /// The workers finish what is queued, then end (they hold the pool until then).
    deinit { pool.stop() }

    /// A place for one job, or `Busy` when `maxQueued` jobs already wait.
    public func admit() throws(Busy) -> Slot {
        if let wait = pool.reserve() { throw Busy(retryAfterMs: wait) }
        return Slot(pool: pool)
    }

    /// A fresh salt and the derived key.
    public func hash(_ password: String, in slot: Slot) async -> (hash: [UInt8], salt: [UInt8], iterations: Int) {
        let salt = Digest.randomBytes(16)
        let iterations = self.iterations
        let key = await derive(password, salt: salt, iterations: iterations, slot)
        return (key, salt, iterations)
    }

    /// Whether `password` matches a stored hash (compared in constant time).
    public func verify(_ password: String, hash: [UInt8], salt: [UInt8], iterations: Int, in slot: Slot) async -> Bool {
        let key = await derive(password, salt: salt, iterations: iterations, slot)
        return Digest.constantTimeEqual(key, hash)
    }

    private func derive(_ password: String, salt: [UInt8], iterations: Int, _ slot: Slot) async -> [UInt8] {
        let pool = slot.use()
        let bytes = Array(password.utf8)
        return await withCheckedContinuation { done in
            pool.run {
                let key = Digest.pbkdf2SHA256(password: bytes, salt: salt, iterations: iterations)
                return { done.resume(returning: key) }
            }
        }
    }
}

/// Worker threads and the jobs waiting for them.
private final class Pool: @unchecked Sendable {
    private let condition = NSCondition()
    /// Each job does its work and returns what to do once its place is given back (resume its caller).
    private var jobs: [() -> (() -> Void)] = []
    private var head = 0
    /// Jobs admitted and not finished (waiting, or running on a worker).
    private var admitted = 0
    /// How long one job took, smoothed: what a refusal's wait is estimated from.
    private var secondsPerJob = 0.3
    private let threads: Int
    private let maxQueued: Int
    /// Its owner is gone: workers end once the queue is empty.
    private var stopping = false

    init(threads: Int, maxQueued: Int) {
        self.threads = threads
        self.maxQueued = maxQueued
        for n in 0..<threads {
            let thread = Thread { self.work() }
            thread.name = "hubbub-kdf-\(n)"
            thread.start()
        }
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Takes a place, or returns the wait in ms when `maxQueued` jobs already wait.
    func reserve() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard admitted < threads + maxQueued else {
            let rounds = Double(admitted - threads + 1) / Double(threads) + 1
            return max(1, Int((rounds * secondsPerJob * 1000).rounded(.up)))
        }
        admitted += 1
        return nil
    }

    /// Gives back a place that was not used.
    func release() {
        condition.lock()
        admitted -= 1
        condition.unlock()
    }

    /// Runs `job` on a worker, in turn (its place was reserved).
    func run(_ job: @escaping () -> (() -> Void)) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        #if canImport(Glibc)
        // Linux keeps a nice value per thread, and `who` 0 is the calling thread: hashing gives way
        // to the loops and the cooperative pool.
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
        while true {
            condition.lock()
            while head == jobs.count, !stopping { condition.wait() }
            guard head < jobs.count else {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head > 64, head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            let start = DispatchTime.now().uptimeNanoseconds
            let finish = job()
            let took = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            condition.lock()
            admitted -= 1
            secondsPerJob = secondsPerJob * 0.8 + took * 0.2
            condition.unlock()
            // The place is free before the caller goes on: a caller that asks again at once finds it.
            finish()
        }
    }
}
