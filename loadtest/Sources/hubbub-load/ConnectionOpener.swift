import HubbubClient
import Transport
import WebSocket

/// Opens many client connections with bounded concurrency, round robin over the loops, with a
/// progress line; returns how many opened and why the others failed.
func openConnections(count: Int, loops: [EventLoop], concurrency: Int, label: String = "connecting",
                     options: @escaping @Sendable (Int) -> ClientOptions,
                     makeHandler: @escaping @Sendable (Int) -> any WebSocketHandler,
                     onOpen: @escaping @Sendable (Int, WebSocketConnection) -> Void = { _, _ in }) async -> (opened: Int, failures: [String: Int]) {
    let progress = Progress(total: count, label: label)
    var opened = 0
    var failures: [String: Int] = [:]
    await withTaskGroup(of: String?.self) { group in
        var next = 0
        func launch() {
            let i = next
            next += 1
            let loop = loops[i % loops.count]
            group.addTask {
                await withCheckedContinuation { done in
                    loop.connect(options(i), makeHandler: { _ in makeHandler(i) }) { result in
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
        for _ in 0..<min(concurrency, count) { launch() }
        while let r = await group.next() {
            if let r { failures[r, default: 0] += 1 } else { opened += 1 }
            progress.tick()
            if next < count { launch() }
        }
    }
    progress.done()
    return (opened, failures)
}
