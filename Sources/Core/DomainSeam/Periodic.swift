import Foundation
import ServiceLifecycle

/// A domain's background chore run every `interval` seconds until the graceful shutdown (sweeping
/// quiet rooms, retiring idle actors). The first run comes one interval after start, unless
/// `atStart` is given: then `atStart` runs first (catching up on what happened while the server
/// was down), and the chore right after it.
public struct Periodic: Service {
    public let interval: Double
    private let atStart: (@Sendable () async -> Void)?
    private let work: @Sendable (_ now: Double) async -> Void

    public init(every interval: Double, atStart: (@Sendable () async -> Void)? = nil,
                _ work: @escaping @Sendable (_ now: Double) async -> Void) {
        self.interval = interval
        self.atStart = atStart
        self.work = work
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            if let atStart {
                await atStart()
                await work(Date().timeIntervalSince1970)
            }
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(interval)) } catch { return }
                await work(Date().timeIntervalSince1970)
            }
        }
    }
}
