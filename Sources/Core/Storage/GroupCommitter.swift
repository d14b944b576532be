import Foundation
import Logging
import Metrics

/// One writer thread that commits queued changes in batches: whatever arrived while the last
/// transaction was committing goes into the next one. Completions run only after the commit;
/// a refused change (stopping, or a full queue) is told at once, on the submitting thread.
final class GroupCommitter: @unchecked Sendable {
    /// A change: runs inside the batch transaction and returns what to do once it is durable. It
    /// may run again if its batch is retried (only the run that commits has its completion called).
    typealias Job = (any SQLDatabase) -> (() -> Void)
    /// Runs one transaction: opens it, hands `body` the connection, commits; throws (having rolled
    /// back) when it could not commit. It may run `body` more than once (rolling back all but the
    /// last run): jobs make their change again and return their completion again.
    typealias Transaction = ((any SQLDatabase) throws -> Void) throws -> Void
    private struct Pending {
        var job: Job
        var failed: (Error) -> Void
    }

    private let transaction: Transaction
    private let maxBatch: Int
    private let maxPending: Int
    private let logger: Logger
    private let condition = NSCondition()
    private var queue: [Pending] = []
    private var stopping = false
    private var stopped = false
    private var transactions = 0
    private var changes = 0
    /// Why the last transaction could not commit (disk full, read-only, I/O error), until one
    /// commits again: while it is set, the writer tries a small transaction of its own every
    /// `probeInterval` when nothing else is waiting, so the store reports itself healthy again
    /// by itself once the cause is gone, not only at the next change someone makes.
    private var fault: String?
    /// A change of the batch being committed noted a fault: its commit does not clear it.
    private var faultInBatch = false
    private let probe: ((any SQLDatabase) throws -> Void)?
    private let probeInterval: TimeInterval
    /// Waiting changes, group transactions and their length (`/metrics`: a backlog shows here first).
    private let waiting = Gauge(label: "hubbub_store_pending_writes")
    private let committed = Counter(label: "hubbub_store_transactions_total")
    private let committedChanges = Counter(label: "hubbub_store_changes_total")
    private let failedTransactions = Counter(label: "hubbub_store_failed_transactions_total")
    private let commitTime = Timer(label: "hubbub_store_commit_seconds")

    init(transaction: @escaping Transaction, maxBatch: Int, maxPending: Int = .max, logger: Logger,
         probe: ((any SQLDatabase) throws -> Void)? = nil, probeInterval: TimeInterval = 1) {
        self.transaction = transaction
        self.probe = probe
        self.probeInterval = probeInterval
        self.maxBatch = max(1, maxBatch)
        self.maxPending = max(1, maxPending)
        self.logger = logger
        // The thread holds the committer until `stop` (a store dropped on a failed start-up, before
        // its thread even began, must not leave it reading a freed object).
        let t = Thread { [self] in self.run() }
        t.name = "hubbub-store-writer"
        t.start()
    }

    /// Queues `job`. Refused (`failed` runs at once, on the caller's thread) when the committer is
    /// stopping, and, if `admit` is set, when `maxPending` changes already wait.
    func submit(admit: Bool, _ job: @escaping Job, failed: @escaping (Error) -> Void) {
        condition.lock()
        if stopped || stopping {
            condition.unlock()
            failed(StoreError.closed)
            return
        }
        if admit && queue.count >= maxPending {
            condition.unlock()
            failed(StoreError.overloaded)
            return
        }
        queue.append(Pending(job: job, failed: failed))
        condition.signal()
        condition.unlock()
    }

    /// Whether fewer than `maxPending` changes wait (a hint: others may submit right after).
    var hasRoom: Bool {
        condition.lock()
        defer { condition.unlock() }
        return queue.count < maxPending
    }

    /// Why the store cannot commit now; nil when the last transaction committed.
    var currentFault: String? {
        condition.lock()
        defer { condition.unlock() }
        return fault
    }

    /// A change failed inside a transaction that committed, for a reason of the storage itself
    /// (the disk filled while its statement ran): the store is not healthy either.
    func noteFault(_ error: Error) {
        condition.lock()
        fault = "\(error)"
        faultInBatch = true
        condition.unlock()
    }

    var stats: (transactions: Int, changes: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (transactions, changes)
    }

    func stop() {
        condition.lock()
        if stopped { condition.unlock(); return }
        stopping = true
        condition.signal()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            var probing = false
            while queue.isEmpty && !stopping {
                guard fault != nil, probe != nil else { condition.wait(); continue }
                if !condition.wait(until: Date(timeIntervalSinceNow: probeInterval)), queue.isEmpty, !stopping, fault != nil {
                    probing = true
                    break
                }
            }
            if queue.isEmpty && stopping {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            if probing, let probe {
                condition.unlock()
                runProbe(probe)
                continue
            }
            let take = min(queue.count, maxBatch)
            let batch = Array(queue.prefix(take))
            queue.removeFirst(take)
            let left = queue.count
            condition.unlock()
            waiting.record(left)
            commit(batch)
        }
    }

    /// A transaction of the writer's own while the store is at fault: it clears the fault if it commits.
    private func runProbe(_ probe: (any SQLDatabase) throws -> Void) {
        do {
            try transaction { db in try probe(db) }
        } catch {
            condition.lock()
            fault = "\(error)"
            condition.unlock()
            return
        }
        condition.lock()
        if fault != nil {
            fault = nil
            logger.notice("the store commits again")
        }
        condition.unlock()
    }

    private func commit(_ batch: [Pending]) {
        var completions: [() -> Void] = []
        completions.reserveCapacity(batch.count)
        condition.lock()
        faultInBatch = false
        condition.unlock()
        let started = DispatchTime.now().uptimeNanoseconds
        defer { commitTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started)) }
        do {
            // (Assigned, not appended: an engine may run the batch twice, see `PostgresEngine.groupTransaction`.)
            try transaction { db in completions = batch.map { $0.job(db) } }
        } catch {
            // The transaction itself failed (disk full, I/O error): nothing in it is durable.
            logger.error("group commit failed", metadata: ["changes": "\(batch.count)", "error": "\(error)"])
            failedTransactions.increment()
            condition.lock()
            fault = "\(error)"
            condition.unlock()
            for p in batch { p.failed(error) }
            return
        }
        condition.lock()
        transactions += 1
        changes += batch.count
        if fault != nil, !faultInBatch {
            fault = nil
            logger.notice("the store commits again")
        }
        condition.unlock()
        committed.increment()
        committedChanges.increment(by: batch.count)
        for done in completions { done() }
    }
}

/// Store failures of its own (the engine's errors pass through: GRDB's `DatabaseError`, PostgreSQL's).
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The store was closed (shutting down): nothing more is written.
    case closed
    /// `maxPendingWrites` changes already wait for the disk: this one was refused, not queued.
    case overloaded
    /// The database file could not be created (at this path).
    case cannotCreate(String)

    public var description: String {
        switch self {
        case .closed: return "the store is closed"
        case .overloaded: return "too many changes are waiting to be written"
        case .cannotCreate(let path): return "cannot create the database file \(path)"
        }
    }
}
