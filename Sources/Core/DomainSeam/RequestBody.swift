import Synchronization

/// A request body as it arrives, for a domain's HTTP endpoint: an async sequence of byte chunks
/// that ends when the body is complete, or throws `RequestBody.Aborted` when the request ended
/// without one (malformed framing, too large, too slow, connection lost; the transport has
/// answered then, or the connection is gone).
///
/// Back-pressure: the core appends chunks as the socket yields them; once more than `highWater`
/// bytes wait unread, it is asked to stop reading (`pause`), and asked to read again (`resume`)
/// when the consumer has drained to half of that. So a slow parser holds the sender back through
/// TCP instead of buffering the whole body.
public final class RequestBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    /// The request ended without a complete body.
    public struct Aborted: Error, Sendable, Equatable {
        public var reason: String
        public init(reason: String) { self.reason = reason }
    }

    /// Chunks not yet read, the end once known, and the reader waiting for either.
    private struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        var buffered = 0
        var end: Result<Void, Aborted>?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        var paused = false
    }

    private let state = Mutex(State())
    private let highWater: Int
    private let pause: @Sendable () -> Void
    private let resume: @Sendable () -> Void

    /// - Parameters:
    ///   - highWater: unread bytes beyond which the producer is paused.
    ///   - pause, resume: stop and restart reading the socket (called outside any lock).
    public init(highWater: Int = 1 << 20, pause: @escaping @Sendable () -> Void = {}, resume: @escaping @Sendable () -> Void = {}) {
        self.highWater = highWater
        self.pause = pause
        self.resume = resume
    }

    /// A body that is already complete (tests, bodies gathered elsewhere).
    public convenience init(_ bytes: [UInt8]) {
        self.init()
        append(bytes)
        finish()
    }

    // MARK: producer (the core)

    /// Adds the next chunk (ignored after the end).
    public func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let (waiter, shouldPause): (CheckedContinuation<[UInt8]?, any Error>?, Bool) = state.withLock { s in
            guard s.end == nil else { return (nil, false) }
            if let w = s.waiter {
                s.waiter = nil
                return (w, false)
            }
            s.chunks.append(bytes)
            s.buffered += bytes.count
            guard !s.paused, s.buffered > highWater else { return (nil, false) }
            s.paused = true
            return (nil, true)
        }
        waiter?.resume(returning: bytes)
        if shouldPause { pause() }
    }

    /// The body is complete.
    public func finish() { end(.success(())) }

    /// The request ended without a complete body.
    public func abort(reason: String) { end(.failure(Aborted(reason: reason))) }

    private func end(_ result: Result<Void, Aborted>) {
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { s in
            guard s.end == nil else { return nil }
            s.end = result
            defer { s.waiter = nil }
            return s.waiter
        }
        switch result {
        case .success: waiter?.resume(returning: nil)
        case .failure(let aborted): waiter?.resume(throwing: aborted)
        }
    }

    // MARK: consumer (the domain)

    /// The next chunk; nil at the end of the body.
    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<[UInt8]?, any Error>) in
            enum Outcome { case chunk([UInt8], resume: Bool), end(Result<Void, Aborted>), wait }
            let outcome: Outcome = state.withLock { s in
                if s.head < s.chunks.count {
                    let chunk = s.chunks[s.head]
                    s.chunks[s.head] = []
                    s.head += 1
                    if s.head == s.chunks.count { s.chunks.removeAll(keepingCapacity: true); s.head = 0 }
                    s.buffered -= chunk.count
                    let resume = s.paused && s.buffered <= highWater / 2
                    if resume { s.paused = false }
                    return .chunk(chunk, resume: resume)
                }
                if let end = s.end { return .end(end) }
                precondition(s.waiter == nil, "a RequestBody is read by one reader at a time")
                s.waiter = c
                return .wait
            }
            switch outcome {
            case .chunk(let chunk, let resumeReading):
                if resumeReading { resume() }
                c.resume(returning: chunk)
            case .end(.success): c.resume(returning: nil)
            case .end(.failure(let aborted)): c.resume(throwing: aborted)
            case .wait: break
            }
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let body: RequestBody
        public mutating func next() async throws -> [UInt8]? { try await body.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }

    /// The whole body, refused with `TooLarge` past `limit` bytes (what was read is dropped).
    public func collect(upTo limit: Int) async throws -> [UInt8] {
        var all: [UInt8] = []
        for try await chunk in self {
            guard all.count + chunk.count <= limit else { throw TooLarge(limit: limit) }
            all += chunk
        }
        return all
    }

    /// A body over the limit its reader set.
    public struct TooLarge: Error, Sendable, Equatable {
        public var limit: Int
    }
}
