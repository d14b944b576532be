import GRDB

/// The server's database opened beside it by a test (to look at rows, or to break a write on
/// purpose): a connection that waits for the server's writer, up to 5 s, rather than failing
/// with "database is locked" when the server happens to be writing (its start-up chores do).
public func sideDatabase(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    return try DatabaseQueue(path: path, configuration: configuration)
}
