import HubbubClient
import Transport
import WebSocket

/// Runs `body` for 0..<count with at most `concurrency` at once, with a progress line; `body`
/// returns nil on success or why it failed. Returns the successes and the failures by reason.
func runBounded(count: Int, concurrency: Int, label: String,
                _ body: @escaping @Sendable (Int) async -> String?) async -> (succeeded: Int, failures: [String: Int]) {
    let progress = Progress(total: count, label: label)
    var succeeded = 0
    var failures: [String: Int] = [:]
    await withTaskGroup(of: String?.self) { group in
        var next = 0
        func launch() {
            let i = next
            next += 1
            group.addTask { await body(i) }
        }
        for _ in 0..<min(concurrency, count) { launch() }
        while let r = await group.next() {
            if let r { failures[r, default: 0] += 1 } else { succeeded += 1 }
            progress.tick()
            if next < count { launch() }
        }
    }
    progress.done()
    return (succeeded, failures)
}

/// Opens many client connections, round robin over the loops.
func openConnections(count: Int, loops: [EventLoop], concurrency: Int, label: String = "connecting",
                     options: @escaping @Sendable (Int) -> ClientOptions,
                     makeHandler: @escaping @Sendable (Int) -> any WebSocketHandler,
                     onOpen: @escaping @Sendable (Int, WebSocketConnection) -> Void = { _, _ in }) async -> (succeeded: Int, failures: [String: Int]) {
    await runBounded(count: count, concurrency: concurrency, label: label) { i in
        await withCheckedContinuation { done in
            loops[i % loops.count].connect(options(i), makeHandler: { _ in makeHandler(i) }) { result in
                switch result {
                case .success(let c):
                    onOpen(i, c)
                    done.resume(returning: nil)
                case .failure(let e):
                    done.resume(returning: "\(e)")
                }
            }
        }
    }
}
