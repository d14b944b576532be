import CLinux
import Logging
import Synchronization
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// One thread with its own epoll instance. It owns its connections: everything about a
/// connection happens on its loop's thread; other threads reach it through `submit`.
public final class EventLoop: @unchecked Sendable {
    public let index: Int
    let epfd: Int32
    private let wakeFD: Int32
    private let timerFD: Int32
    let configuration: TransportConfiguration
    let shared: SharedState

    // The loop's mutable state is touched only by its own thread, one access at a time by
    // construction; the runtime's exclusivity check on each access (a thread-local lookup) cost
    // about a fifth of a fan-out's CPU, so the hot properties here and in `SocketConnection` and
    // its subclasses opt out of it with `@exclusivity(unchecked)`.

    /// Connections by file descriptor (descriptors are small and dense), at whatever stage.
    @exclusivity(unchecked) var connections: [SocketConnection?] = []
    private var listeners: [Int32: Bool] = [:] // fd -> TLS
    private var pausedListeners: [Int32] = []
    /// Descriptors of connections with bytes queued since the last flush (descriptors, not
    /// references: marking a connection costs no reference counting; a closed one is skipped).
    @exclusivity(unchecked) var dirty: [Int32] = []
    /// The descriptor whose events are being handled (-1 between them): `events` flushes it
    /// itself, so it joins no dirty list (an echo's reply costs no append to one).
    @exclusivity(unchecked) var serving: Int32 = -1
    private let inbox = Mutex<[LoopTask]>([])
    private var spareTasks: [LoopTask] = []
    private let wakePending = Atomic<Bool>(false)
    private var generation: UInt32 = 0

    let readBuffer: UnsafeMutableRawBufferPointer
    let plainBuffer: UnsafeMutableRawBufferPointer
    let iovecs: UnsafeMutableBufferPointer<iovec>
    /// Frames of the one connection that holds the cork, written out when it is flushed
    /// (`SocketConnection+Cork.swift`); `corkFD` is -1 when no connection holds it.
    let cork: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) var corkFD: Int32 = -1
    @exclusivity(unchecked) var corkUsed = 0
    /// Inflates for connections whose client resets its context per message (one at a time).
    let sharedInflater = Inflater(noContextTakeover: true)
    @exclusivity(unchecked) var stats = LoopStats()
    /// One shared setup per kind of WebSocket connection (few kinds, many connections).
    private var webSocketSetups: [WebSocketSetupKey: WebSocketStateMachine.Setup] = [:]
    private struct WebSocketSetupKey: Hashable {
        var role: WebSocketStateMachine.Role
        var configuration: WebSocketStateMachine.Configuration
        var deflate: PerMessageDeflate.Parameters?
        var subprotocol: String?
    }
    @exclusivity(unchecked) private(set) var now: UInt64 = monotonicNanos()

    private var stopDeadline: UInt64?
    private var running = true

    struct SharedState: Sendable {
        let application: (any ServerApplication)?
        let tls: TLSContext?
        let limiter: ConnectionLimiter
        let metrics: TransportMetrics
        let deflaters: DeflaterPool
        let logger: Logger
    }

    init(index: Int, configuration: TransportConfiguration, shared: SharedState) throws {
        self.index = index
        self.configuration = configuration
        self.shared = shared
        epfd = clinux_epoll_create()
        wakeFD = clinux_eventfd()
        timerFD = clinux_timerfd(Int32(max(10, configuration.tickIntervalMillis)))
        guard epfd >= 0, wakeFD >= 0, timerFD >= 0 else { throw TransportError.system("epoll/eventfd/timerfd", clinux_errno()) }
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        plainBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        iovecs = .allocate(capacity: 64)
        cork = .allocate(byteCount: 16 * 1024, alignment: 16)
        _ = clinux_epoll_add(epfd, wakeFD, UInt32(CLINUX_EPOLLIN), UInt64(wakeFD))
        _ = clinux_epoll_add(epfd, timerFD, UInt32(CLINUX_EPOLLIN), UInt64(timerFD))
    }

    deinit {
        readBuffer.deallocate()
        plainBuffer.deallocate()
        cork.deallocate()
        iovecs.deallocate()
        _ = clinux_close(epfd)
        _ = clinux_close(wakeFD)
        _ = clinux_close(timerFD)
    }

    // MARK: Cross-thread entry

    /// Hands work to this loop from any thread; wakes it at most once per batch.
    func submit(_ task: LoopTask) {
        inbox.withLock { $0.append(task) }
        wake()
    }

    /// Runs `body` on this loop's thread.
    public func execute(_ body: @escaping @Sendable (EventLoop) -> Void) { submit(.run(body)) }

    /// Sends one message to many connections of this loop with a single wake-up. The array is
    /// handed over as it is (a room's member list, shared copy-on-write): no per-member work here.
    public func send(_ message: OutboundMessage, to members: [ConnectionID]) {
        submit(.sendMany(members, message))
    }

    /// Queues one message for many connections of this loop, on its thread (what `send(_:to:)`
    /// hands over ends here). Connections that closed meanwhile are skipped by their generation.
    public func deliver(_ message: OutboundMessage, to members: [ConnectionID]) {
        for id in members {
            if let c = connection(for: id) { c.send(message) }
        }
    }

    /// Sends to one connection of this loop.
    public func send(_ message: OutboundMessage, to member: ConnectionID) {
        submit(.send(ConnectionHandle(loop: self, fd: member.slot, generation: member.generation), message))
    }

    /// Starts the close handshake with one connection of this loop.
    public func close(_ member: ConnectionID, code: CloseCode, reason: String) {
        submit(.closeID(member, code, reason))
    }

    private func wake() {
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = clinux_eventfd_signal(wakeFD)
        }
    }

    // MARK: Listening

    func addListener(fd: Int32, tls: Bool) {
        listeners[fd] = tls
        _ = clinux_epoll_add(epfd, fd, UInt32(CLINUX_EPOLLIN), UInt64(fd))
    }

    private func closeListeners() {
        for fd in listeners.keys {
            _ = clinux_epoll_del(epfd, fd)
            _ = clinux_close(fd)
        }
        listeners = [:]
    }

    // MARK: The loop

    func run() {
        let events = UnsafeMutablePointer<clinux_event>.allocate(capacity: 512)
        defer { events.deallocate() }
        let spin = UInt64(configuration.spinMicros) * 1000
        var idleSince: UInt64 = 0
        while running {
            // Poll without sleeping for a short while after the last event: on virtual machines a
            // halted CPU wakes up slowly (milliseconds), which would dominate round-trip latency.
            let mayBlock = dirty.isEmpty && (spin == 0 || monotonicNanos() &- idleSince > spin)
            let n = clinux_epoll_wait(epfd, events, 512, mayBlock ? -1 : 0)
            now = monotonicNanos()
            if n > 0 { idleSince = now }
            if n > 0 {
                for i in 0..<Int(n) {
                    let fd = Int32(truncatingIfNeeded: events[i].data)
                    let mask = events[i].events
                    if fd == wakeFD {
                        _ = clinux_eventfd_drain(wakeFD)
                        drainInbox()
                    } else if fd == timerFD {
                        _ = clinux_timerfd_drain(timerFD)
                        tick()
                    } else if let c = connection(fd) {
                        // Before the listeners: an array read, where theirs is a hash (and a
                        // listening socket never has a connection).
                        c.events(mask)
                    } else if let tls = listeners[fd] {
                        acceptAll(listenFD: fd, tls: tls)
                    }
                }
            }
            flushDirty()
        }
        // However the loop stopped (a bare `stop()`, or a task that opened a connection after a
        // shutdown began), nothing may stay open: each connection holds its loop, and would keep
        // it, its buffers and its descriptors alive for good.
        closeListeners()
        for case let c? in connections { c.closeNow(code: .goingAway, reason: "loop stopped") }
        dirty.removeAll()
    }

    @inline(__always) func connection(_ fd: Int32) -> SocketConnection? {
        Int(fd) < connections.count ? connections[Int(fd)] : nil
    }

    /// The connection at `fd` if it is still the one of `generation` and at stage `kind`.
    @inline(__always) private func connection(_ fd: Int32, generation: UInt32, kind: SocketConnection.Kind) -> SocketConnection? {
        guard let c = connection(fd), c.generation == generation, c.kind == kind else { return nil }
        return c
    }

    /// The WebSocket at `fd`, if that is what it is now.
    @inline(__always) private func webSocket(_ fd: Int32, generation: UInt32) -> WebSocketConnection? {
        // The kind says what the object is: no dynamic cast per push.
        connection(fd, generation: generation, kind: .webSocket).map { unsafeDowncast($0, to: WebSocketConnection.self) }
    }

    /// The WebSocket `handle` names, if it is still the same one (loop thread only).
    func connection(for handle: ConnectionHandle) -> WebSocketConnection? {
        handle.loop === self ? webSocket(handle.fd, generation: handle.generation) : nil
    }

    /// The HTTP connection `handle` names, until it closes (a request's exchange answers through it).
    func httpConnection(for handle: ConnectionHandle) -> HTTPConnection? {
        guard handle.loop === self, let c = connection(handle.fd, generation: handle.generation, kind: .http) else { return nil }
        return unsafeDowncast(c, to: HTTPConnection.self)
    }

    /// The open WebSocket `id` names, if it is still the same one (loop thread only).
    public func connection(for id: ConnectionID) -> WebSocketConnection? {
        Int(id.loop) == index ? webSocket(id.slot, generation: id.generation) : nil
    }

    /// The setup connections of this kind share, made on first use.
    func webSocketSetup(role: WebSocketStateMachine.Role, configuration: WebSocketStateMachine.Configuration,
                        deflate: PerMessageDeflate.Parameters?, subprotocol: String?) -> WebSocketStateMachine.Setup {
        let key = WebSocketSetupKey(role: role, configuration: configuration, deflate: deflate, subprotocol: subprotocol)
        if let known = webSocketSetups[key] { return known }
        let made = WebSocketStateMachine.Setup(role: role, configuration: configuration, deflate: deflate, subprotocol: subprotocol)
        webSocketSetups[key] = made
        return made
    }

    func markDirty(_ c: SocketConnection) {
        if !c.dirty {
            c.dirty = true
            // The connection whose events are being handled is flushed right after them.
            if c.fd != serving { dirty.append(c.fd) }
        }
    }

    private func flushDirty() {
        var i = 0
        while i < dirty.count {
            if let c = connection(dirty[i]), c.dirty { c.flush() }
            i += 1
        }
        if !dirty.isEmpty { dirty.removeAll(keepingCapacity: true) }
    }

    private func drainInbox() {
        wakePending.store(false, ordering: .releasing)
        // Swap the queue with a spare so neither side allocates in steady state.
        var tasks = spareTasks
        inbox.withLock { swap(&$0, &tasks) }
        defer {
            tasks.removeAll(keepingCapacity: true)
            spareTasks = tasks
        }
        for task in tasks {
            switch task {
            case .send(let h, let m):
                connection(for: h)?.send(m)
            case .sendMany(let ids, let m):
                deliver(m, to: ids)
            case .closeID(let id, let code, let reason):
                connection(for: id)?.close(code: code, reason: reason)
            case .close(let h, let code, let reason):
                connection(for: h)?.close(code: code, reason: reason)
            case .run(let body):
                body(self)
            }
        }
    }

    private func tick() {
        for fd in pausedListeners where listeners[fd] != nil {
            _ = clinux_epoll_add(epfd, fd, UInt32(CLINUX_EPOLLIN), UInt64(fd))
        }
        pausedListeners.removeAll()
        shared.metrics.publish(stats)
        stats = LoopStats()
        for case let c? in connections { c.tick(now: now) }
        if let deadline = stopDeadline {
            let open = connections.contains { $0 != nil }
            if !open || now >= deadline {
                for case let c? in connections { c.abort(reason: "shutdown") }
                running = false
            }
        }
    }

    // MARK: Accepting

    private func acceptAll(listenFD: Int32, tls: Bool) {
        var addr = [CChar](repeating: 0, count: 64)
        for _ in 0..<256 {
            let fd = clinux_accept(listenFD, &addr, Int32(addr.count))
            if fd < 0 {
                let e = clinux_errno()
                if e == EMFILE || e == ENFILE {
                    // The listener stays readable while the backlog waits: stop watching it until
                    // the next tick instead of spinning.
                    shared.logger.error("accept: out of file descriptors; pausing accepts", metadata: ["errno": "\(e)"])
                    _ = clinux_epoll_del(epfd, listenFD)
                    pausedListeners.append(listenFD)
                }
                return
            }
            let ip = String(decoding: addr.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let refusal = shared.limiter.admit(ip) {
                shared.metrics.handshakeFailed(refusal)
                if tls {
                    _ = clinux_close(fd) // no plain-text answer on a TLS port
                    continue
                }
                // Tell an HTTP client why before closing (best effort; the socket is fresh).
                let body = HTTPResponse.make(status: 503, body: Array("\(refusal.replacingUnderscores) reached\n".utf8))
                body.withUnsafeBytes { b in
                    var v = iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count)
                    _ = clinux_sendv(fd, &v, 1)
                }
                _ = clinux_close(fd)
                continue
            }
            adopt(fd: fd, ip: ip, tls: tls ? shared.tls : nil, client: nil)
        }
    }

    /// Registers a new socket as a connection of this loop: an `HTTPConnection` (accepted) or a
    /// `ClientUpgrade` (`client`). False when its TLS session could not be made (it is closed).
    @discardableResult
    func adopt(fd: Int32, ip: String, tls: TLSContext?, client: ClientSetup?) -> Bool {
        generation &+= 1
        var session: TLSSession?
        if let tls {
            do {
                session = try TLSSession(context: tls, isServer: client == nil, serverName: client?.serverName, verifyHost: tls.verifiesPeer)
            } catch {
                shared.logger.warning("cannot set up TLS for a connection", metadata: ["error": "\(error)"])
                if client == nil { shared.limiter.release(ip) }
                _ = clinux_close(fd)
                return false
            }
        }
        let c: SocketConnection = if let client {
            ClientUpgrade(loop: self, fd: fd, generation: generation, host: ip, tls: session, setup: client)
        } else {
            HTTPConnection(loop: self, fd: fd, generation: generation, remoteAddress: ip, tls: session)
        }
        if Int(fd) >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: max(Int(fd) + 1 - connections.count, connections.count)))
        }
        connections[Int(fd)] = c
        let events = UInt32(CLINUX_EPOLLIN | CLINUX_EPOLLRDHUP) | (client != nil ? UInt32(CLINUX_EPOLLOUT) : 0)
        c.epollOut = client != nil
        _ = clinux_epoll_add(epfd, fd, events, UInt64(fd))
        return true
    }

    /// Puts the connection that took a socket over (an upgrade) in its place: same descriptor and
    /// generation, so handles and member ids stay valid, and the dirty list (descriptors) finds it.
    func replace(_ previous: SocketConnection, with next: SocketConnection) {
        if connection(previous.fd) === previous { connections[Int(previous.fd)] = next }
    }

    func forget(_ c: SocketConnection) {
        _ = clinux_epoll_del(epfd, c.fd)
        if connection(c.fd) === c { connections[Int(c.fd)] = nil }
    }

    func setWriteInterest(_ c: SocketConnection, _ on: Bool) {
        guard c.epollOut != on, !c.outputOnly else { return }
        c.epollOut = on
        updateInterest(c)
    }

    /// Stops or restarts reading a connection's input (a request body's handler catching up).
    func setReadInterest(_ c: SocketConnection, _ on: Bool) {
        guard c.readPaused == on, !c.outputOnly else { return }
        c.readPaused = !on
        updateInterest(c)
    }

    private func updateInterest(_ c: SocketConnection) {
        let input = c.readPaused ? 0 : UInt32(CLINUX_EPOLLIN | CLINUX_EPOLLRDHUP)
        _ = clinux_epoll_mod(epfd, c.fd, input | (c.epollOut ? UInt32(CLINUX_EPOLLOUT) : 0), UInt64(c.fd))
    }

    /// Watches only for writability (the peer has stopped sending; its EOF would fire forever).
    func watchOutputOnly(_ c: SocketConnection) {
        c.outputOnly = true
        c.epollOut = true
        _ = clinux_epoll_mod(epfd, c.fd, UInt32(CLINUX_EPOLLOUT), UInt64(c.fd))
    }

    // MARK: Shutdown

    /// Stops accepting, starts the close handshake (1001 `restart`) with every WebSocket,
    /// closes everything else, and ends the loop once all are gone or `timeout` passed.
    func beginShutdown(timeoutNanos: UInt64) {
        execute { loop in
            loop.closeListeners()
            loop.stopDeadline = loop.now + timeoutNanos
            for case let c? in loop.connections {
                if c.kind == .webSocket && c.stage.isOpen {
                    unsafeDowncast(c, to: WebSocketConnection.self).close(code: .goingAway, reason: "restart")
                } else if !c.isClient {
                    c.closeNow(code: .goingAway, reason: "shutdown")
                }
            }
            loop.flushDirty()
        }
    }

    /// Ends the loop after the tasks already queued; what is still open is then closed (1001).
    func stop() { execute { $0.running = false } }
}

/// A failure of the transport itself.
public enum TransportError: Error, CustomStringConvertible {
    case system(String, Int32)
    case listen(String, Int, Int32)
    case connect(String)

    public var description: String {
        switch self {
        case .system(let what, let e): return "\(what) failed: \(String(cString: strerror(e)))"
        case .listen(let host, let port, let e): return "cannot listen on \(host):\(port): \(String(cString: strerror(e)))"
        case .connect(let why): return "connect failed: \(why)"
        }
    }
}

extension String {
    var replacingUnderscores: String { String(map { $0 == "_" ? " " : $0 }) }
}
