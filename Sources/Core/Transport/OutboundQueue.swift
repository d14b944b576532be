import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to be written to one socket: shared, immutable chunks written with `writev`.
/// Bounded by the owner (a queue over its limit marks a slow consumer).
///
/// A lone chunk (the usual case: one push to a connection that had nothing waiting) sits in
/// `lone`, so queueing it allocates nothing; only a second chunk moves them into `chunks`.
struct OutboundQueue {
    /// The only chunk waiting, when there is just one; `chunks` is then empty.
    private var lone: SharedBytes?
    /// The chunks waiting when there are several (`lone` is then nil), from `head` on.
    private var chunks: [SharedBytes] = []
    /// Index in `chunks` of the first chunk not fully written.
    private var head: Int32 = 0
    /// Bytes of the first waiting chunk already written (chunks are under 2 GiB: frames are
    /// bounded by `limits.maxMessageBytes`, TLS records by their buffer).
    private var headOffset: Int32 = 0
    /// Bytes not yet written (chunks are never empty, so 0 means nothing waits).
    private(set) var pendingBytes = 0

    var isEmpty: Bool { pendingBytes == 0 }

    /// The first chunk not fully written (the queue is not empty).
    private var first: SharedBytes { lone ?? chunks[Int(head)] }

    /// Bytes waiting behind the chunk being written: the backlog a slow reader builds up
    /// (one large message in flight is not a backlog).
    var backlogBytes: Int {
        isEmpty ? 0 : pendingBytes - (first.count - Int(headOffset))
    }

    mutating func append(_ chunk: SharedBytes) {
        guard chunk.count > 0 else { return }
        if isEmpty {
            lone = chunk
        } else if let l = lone {
            lone = nil
            chunks.append(l)
            chunks.append(chunk)
        } else {
            chunks.append(chunk)
        }
        pendingBytes += chunk.count
    }

    /// Drops every chunk that has not started going out (a partly written frame must finish,
    /// or the peer would see a corrupt stream).
    mutating func dropUnstarted() {
        // The first chunk stays even if nothing of it went out yet: it may be the 101 answer.
        guard lone == nil else { return }
        let keep = Int(head) + 1
        guard keep < chunks.count else { return }
        for c in chunks[keep...] { pendingBytes -= c.count }
        chunks.removeSubrange(keep...)
    }

    /// Frees the array of an empty queue (the loop's tick calls this): an idle connection holds
    /// no storage for output, a busy one keeps reusing its array between ticks.
    mutating func releaseIfIdle() {
        if isEmpty && chunks.capacity > 0 { chunks = [] }
    }

    /// Outcome of a write attempt.
    enum WriteResult {
        /// Everything queued was written.
        case drained
        /// The socket's buffer is full; wait for EPOLLOUT.
        case blocked
        /// The socket failed (errno).
        case failed(Int32)
    }

    /// Writes as much as the socket takes, up to `iovecs.count` chunks per system call.
    mutating func write(to fd: Int32, iovecs: UnsafeMutableBufferPointer<iovec>, written: inout Int) -> WriteResult {
        while !isEmpty {
            var n = 0
            var wanted = 0
            if let l = lone {
                let skip = Int(headOffset)
                iovecs[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: l.baseAddress + skip), iov_len: l.count - skip)
                wanted = l.count - skip
                n = 1
            } else {
                var i = Int(head)
                while i < chunks.count && n < iovecs.count {
                    let c = chunks[i]
                    let skip = i == Int(head) ? Int(headOffset) : 0
                    iovecs[n] = iovec(iov_base: UnsafeMutableRawPointer(mutating: c.baseAddress + skip), iov_len: c.count - skip)
                    wanted += c.count - skip
                    n += 1
                    i += 1
                }
            }
            let rc = clinux_sendv(fd, iovecs.baseAddress, Int32(n))
            if rc < 0 {
                let e = clinux_errno()
                if e == EAGAIN || e == EWOULDBLOCK { return .blocked }
                return .failed(e)
            }
            written += rc
            consume(rc)
            // A short write means the socket buffer is full: another call would only get EAGAIN.
            if rc < wanted { return .blocked }
        }
        return .drained
    }

    private mutating func consume(_ count: Int) {
        pendingBytes -= count
        if let l = lone {
            headOffset += Int32(count)
            if Int(headOffset) == l.count {
                lone = nil
                headOffset = 0
            }
            return
        }
        var left = count
        while left > 0 {
            let available = chunks[Int(head)].count - Int(headOffset)
            if left >= available {
                left -= available
                head += 1
                headOffset = 0
            } else {
                headOffset += Int32(left)
                left = 0
            }
        }
        if Int(head) == chunks.count {
            // Keep the array for the next burst (a busy connection then does not allocate for
            // it); `releaseIfIdle` frees it once the connection goes quiet, a big one at once.
            if chunks.capacity <= 64 { chunks.removeAll(keepingCapacity: true) } else { chunks = [] }
            head = 0
        } else if head >= 64 && Int(head) * 2 >= chunks.count {
            chunks.removeFirst(Int(head))
            head = 0
        }
    }
}
