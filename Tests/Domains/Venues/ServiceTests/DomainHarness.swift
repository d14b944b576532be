import DomainSeam
import Foundation
import GRDB
import HubbubTestSupport
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import VenueService
import WebSocket
import XCTest

/// The venues domain on a real store in a temporary directory, driven op by op without sockets
/// (calls may run concurrently).
final class DomainHarness: @unchecked Sendable {
    let sink = RecordingSink()
    let domain: VenuesDomain
    let store: Store
    private let nextID = Atomic<Int>(1)
    private let nextSlot = Atomic<Int32>(1)

    init(maxPendingWrites: Int = Store.Configuration(directory: "").maxPendingWrites) throws {
        let dir = NSTemporaryDirectory() + "hubbub-domain-\(UUID().uuidString)"
        var migrator = SQLMigrations()
        RoomLogSchema.migrations(&migrator)
        VenuesDomain.migrations(&migrator)
        var storage = Store.Configuration(directory: dir)
        storage.maxPendingWrites = maxPendingWrites
        store = try Store(configuration: storage, migrations: migrator)
        domain = VenuesDomain(context: DomainContext(store: store, sink: sink, settings: SettingValues(), roomHistory: .init(),
                                                     capabilities: Capabilities(), logger: Logger(label: "test"), dataDirectory: dir))
    }

    deinit { store.close() }

    func connection() -> ConnectionID {
        ConnectionID(loop: 0, slot: nextSlot.add(1, ordering: .relaxed).oldValue, generation: 1)
    }

    /// Runs `op` as `user` over `member` and waits for its reply; returns the reply's result or throws its error.
    @discardableResult
    func call(_ op: String, _ args: JSON, user: String, member: ConnectionID) async throws -> JSON {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        guard let found = domain.ops.first(where: { $0.name == op }) else { throw TestError("no op \(op)") }
        let reply = Replier(member: member, requestID: id, sink: sink)
        do {
            switch try await found.run(Args(args), OpCall(requestID: id, user: user, session: FakeSession(member), reply: reply)) {
            case .reply(let result): return result
            case .sent: break
            }
        } catch {
            throw TestError("\(op): \(error)")
        }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            for m in sink.messages(member) {
                let json = try JSONParser.parse(m.payload)
                guard json["id"] == .int(id) else { continue }
                guard json["ok"] == .bool(true), let result = json["result"] else { throw TestError("\(op): \(json.encoded)") }
                return result
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw TestError("\(op): no reply")
    }

    /// Subscribes `member` to `venue:<id>` through the domain's room directory.
    func subscribe(_ venue: String, user: String, member: ConnectionID) async throws {
        try await subscribe(through: try await domain.directory.actor(for: venue), member: member)
    }

    /// Subscribes `member` as the core does: a snapshot from `actor`, then the node's feed from its
    /// head on; the reply (request `requestID`) carries the snapshot.
    func subscribe(through actor: VenueActor, member: ConnectionID, requestID: Int = 0) async throws {
        let snapshot = try await actor.snapshot()
        let room = "venue:\(await actor.venueID)"
        let sink = self.sink
        domain.directory.feed.subscribe(member, room: room, at: snapshot.head, mark: snapshot.mark) {
            sink.deliver(OutboundMessage(text: Envelope.success(id: requestID, result: ["snapshot": snapshot.data])), to: member)
        }
    }

    /// Pushes `member` received (messages with a `room`), parsed.
    func pushes(_ member: ConnectionID) throws -> [(json: JSON, bytes: Int)] {
        try sink.messages(member).compactMap { m in
            let json = try JSONParser.parse(m.payload)
            return json["room"] == nil ? nil : (json, m.payload.count)
        }
    }
}
