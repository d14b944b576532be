import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to be written to one socket: shared, immutable chunks written with `writev`.
/// Bounded by the owner (a queue over its limit marks a slow consumer).
struct OutboundQueue {
    private var chunks: [SharedBytes] = []
    /// Index of the first chunk not fully written.
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var headOffset = 0
    /// Bytes not yet written.
    private(set) var pendingBytes = 0

    var isEmpty: Bool { head == chunks.count }

    /// Bytes waiting behind the chunk being written: the backlog a slow reader builds up
    /// (one large message in flight is not a backlog).
    var backlogBytes: Int {
        head < chunks.count ? pendingBytes - (chunks[head].count - headOffset) : 0
    }

    mutating func append(_ chunk: SharedBytes) {
        guard chunk.count > 0 else { return }
        chunks.append(chunk)
        pendingBytes += chunk.count
    }

    /// Drops every chunk that has not started going out (a partly written frame must finish,
    /// or the peer would see a corrupt stream).
    mutating func dropUnstarted() {
        // The head chunk stays even if nothing of it went out yet: it may be the 101 answer.
        let keep = head + 1
        guard keep < chunks.count else { return }
        for c in chunks[keep...] { pendingBytes -= c.count }
        chunks.removeSubrange(keep...)
    }

    /// Frees the array of an empty queue (the loop's tick calls this): an idle connection holds
    /// no storage for output, a busy one keeps reusing its array between ticks.
    mutating func releaseIfIdle() {
        if head == chunks.count && chunks.capacity > 0 { chunks = [] }
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
        while head < chunks.count {
            var n = 0
            var i = head
            var wanted = 0
            while i < chunks.count && n < iovecs.count {
                let c = chunks[i]
                let skip = i == head ? headOffset : 0
                iovecs[n] = iovec(iov_base: UnsafeMutableRawPointer(mutating: c.baseAddress + skip), iov_len: c.count - skip)
                wanted += c.count - skip
                n += 1
                i += 1
            }
            let rc = clinux_writev(fd, iovecs.baseAddress, Int32(n))
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
        var left = count
        pendingBytes -= count
        while left > 0 {
            let available = chunks[head].count - headOffset
            if left >= available {
                left -= available
                head += 1
                headOffset = 0
            } else {
                headOffset += left
                left = 0
            }
        }
        if head == chunks.count {
            // Keep the array for the next sends (a busy connection then never allocates for a
            // push); `releaseIfIdle` frees it once the connection goes quiet, a big one at once.
            if chunks.capacity <= 64 { chunks.removeAll(keepingCapacity: true) } else { chunks = [] }
            head = 0
        } else if head >= 64 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
