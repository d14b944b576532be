import Foundation

/// The time domains go by (seconds since 1970). The server uses the system's; tests give a clock
/// they move by hand, so that "tonight", expiries and reminders can be tested without waiting.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Double

    public init(_ read: @escaping @Sendable () -> Double) { self.read = read }

    public var now: Double { read() }

    /// The system's clock.
    public static let system = WallClock { Date().timeIntervalSince1970 }
}
