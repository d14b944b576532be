/// Names one connection from any thread, without a reference to it: the event loop that owns it
/// (its delivery batch), its slot on that loop (the file descriptor) and a generation that tells a
/// reused slot from the connection that held it before. Rooms keep these as their members, so the
/// domains that own rooms never see the transport.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The owning event loop's index: pushes are handed over once per loop, not once per member.
    public let loop: Int32
    /// The connection's slot on its loop.
    public let slot: Int32
    /// Differs between two connections that used the same slot.
    public let generation: UInt32

    public init(loop: Int, slot: Int32, generation: UInt32) {
        self.loop = Int32(loop)
        self.slot = slot
        self.generation = generation
    }

    public var description: String { "conn(\(loop):\(slot):\(generation))" }
}
