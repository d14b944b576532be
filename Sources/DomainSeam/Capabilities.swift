import Synchronization

/// What domains offer each other without importing each other: a domain provides a value under a
/// protocol type when it is built, another looks it up when it needs it (so the order in which
/// domains are registered does not matter).
public final class Capabilities: Sendable {
    private let values = Mutex<[ObjectIdentifier: any Sendable]>([:])

    public init() {}

    public func provide<T>(_ type: T.Type, _ value: T) where T: Sendable {
        values.withLock { $0[ObjectIdentifier(type)] = value }
    }

    /// The value provided under `type`, if any domain provides one.
    public func resolve<T>(_ type: T.Type) -> T? {
        values.withLock { $0[ObjectIdentifier(type)] } as? T
    }
}

/// Whether a user exists (the accounts domain provides it; venues use it to add a co-owner).
public protocol UserDirectory: Sendable {
    func exists(_ user: String) async -> Bool
}
