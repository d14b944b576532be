import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// Starts a detached-from-Swift-concurrency OS thread (event loops must not block the
/// cooperative pool, so they get threads of their own).
func startThread(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box { let body: @Sendable () -> Void; let name: String; init(_ b: @escaping @Sendable () -> Void, _ n: String) { body = b; name = n } }
    let box = Unmanaged.passRetained(Box(body, name)).toOpaque()
    var tid = pthread_t()
    let rc = pthread_create(&tid, nil, { arg in
        guard let arg else { return nil }
        let box = Unmanaged<Box>.fromOpaque(arg).takeRetainedValue()
        box.name.withCString { clinux_set_thread_name($0) }
        box.body()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    return tid
}

/// Monotonic time in nanoseconds.
@inline(__always) func monotonicNanos() -> UInt64 { clinux_now_ns() }
