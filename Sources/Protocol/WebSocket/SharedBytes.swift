/// Immutable bytes in one heap allocation whose address is stable for the storage's life, so
/// queued chunks can go to `writev` without copying. Shared freely between threads once built
/// (nothing mutates the bytes after `create` returns).
public struct SharedBytes: @unchecked Sendable {
    final class Storage: ManagedBuffer<Int, UInt8> {}
    private let storage: Storage
    /// Kept beside the reference, not read from the buffer's header: a class property read costs
    /// a runtime exclusivity check, and queues read every chunk's count.
    public let count: Int

    /// Allocates `count` bytes and lets `fill` write them exactly once.
    public static func create(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) -> SharedBytes {
        // `create` on the subclass makes a `Storage`: no dynamic cast per frame to say so.
        let storage = unsafeDowncast(Storage.create(minimumCapacity: max(count, 1)) { _ in count }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { p in fill(UnsafeMutableRawBufferPointer(start: p, count: count)) }
        return SharedBytes(storage: storage, count: count)
    }

    /// Copies `bytes`.
    public static func copy(_ bytes: UnsafeRawBufferPointer) -> SharedBytes {
        create(count: bytes.count) { dst in if bytes.count > 0 { dst.copyMemory(from: bytes) } }
    }

    public static func copy(_ bytes: [UInt8]) -> SharedBytes { bytes.withUnsafeBytes { copy($0) } }

    /// The bytes' address: valid while any copy of this value is alive.
    public var baseAddress: UnsafeRawPointer { storage.withUnsafeMutablePointerToElements { UnsafeRawPointer($0) } }

    public func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointerToElements { try body(UnsafeRawBufferPointer(start: $0, count: count)) }
    }

    /// The bytes as an array (a copy).
    public var array: [UInt8] { withBytes { Array($0) } }
}
