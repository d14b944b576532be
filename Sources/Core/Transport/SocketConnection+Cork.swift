import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// The cork: frames a connection sends for itself (an echo, a reply written on its loop) are
/// written into one buffer of the loop instead of a heap block each, and go out in one write
/// when the connection is flushed, as uWebSockets does. (The allocation and its release were
/// about a tenth of an echo server's user time; the loop's matrix beside uWebSockets measures it.)
/// One connection holds the cork at a time, only while its queue is empty; anything queued for
/// it meanwhile (a shared push, a pong) first moves the corked bytes into the queue, so the order
/// on the wire is the order of the calls. Plain sockets only: TLS encrypts as it queues.
extension SocketConnection {
    /// Writes `count` bytes with `fill` into the cork if this connection may hold it now;
    /// false: queue them instead (the cork is someone else's, too full, or there is TLS).
    final func cork(count: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard tls == nil, loop.corkFD == fd || (loop.corkFD < 0 && queue.isEmpty) else { return false }
        guard count <= loop.cork.count - loop.corkUsed else {
            spillCork() // this one is queued after what is corked
            return false
        }
        loop.corkFD = fd
        fill(UnsafeMutableRawBufferPointer(rebasing: loop.cork[loop.corkUsed..<(loop.corkUsed + count)]))
        loop.corkUsed += count
        loop.markDirty(self)
        return true
    }

    /// Moves this connection's corked bytes from `offset` on (those not written yet), if it holds
    /// the cork, into its queue, and lets the cork go.
    final func spillCork(from offset: Int = 0) {
        guard loop.corkFD == fd else { return }
        if offset < loop.corkUsed {
            queue.append(SharedBytes.copy(UnsafeRawBufferPointer(rebasing: loop.cork[offset..<loop.corkUsed])))
        }
        releaseCork()
    }

    /// Writes the corked bytes straight from the cork (the queue is empty while it is held);
    /// what the socket does not take is queued. False when the socket failed.
    final func writeCork(written: inout Int) -> Bool {
        loop.iovecs[0] = iovec(iov_base: loop.cork.baseAddress, iov_len: loop.corkUsed)
        let rc = clinux_sendv(fd, loop.iovecs.baseAddress, 1)
        if rc < 0 {
            let e = clinux_errno()
            guard e == EAGAIN || e == EWOULDBLOCK else {
                releaseCork()
                return false
            }
            spillCork()
            return true
        }
        written += rc
        spillCork(from: rc)
        return true
    }

    /// Lets go of the cork, dropping what it holds (after writing or moving it, or on close).
    final func releaseCork() {
        guard loop.corkFD == fd else { return }
        loop.corkFD = -1
        loop.corkUsed = 0
    }
}
