import Foundation
import ServiceLifecycle

/// A domain's background chore run every `interval` seconds until the graceful shutdown (sweeping
/// quiet rooms, retiring idle actors). The first run comes one interval after start.
public struct Periodic: Service {
    public let interval: Double
    private let work: @Sendable (_ now: Double) async -> Void

    public init(every interval: Double, _ work: @escaping @Sendable (_ now: Double) async -> Void) {
        self.interval = interval
        self.work = work
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(interval)) } catch { return }
                await work(Date().timeIntervalSince1970)
            }
        }
    }
}
