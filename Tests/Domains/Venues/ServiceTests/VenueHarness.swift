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

/// The venues domain in the shared in-process harness.
extension DomainHarness {
    /// The venues domain alone on a new temporary store; `maxPendingWrites` bounds the store's write
    /// queue (the store's default otherwise).
    static func venues(maxPendingWrites: Int? = nil) throws -> DomainHarness {
        try DomainHarness([VenuesDomain.self], label: "hubbub-domain", configure: { configuration in
            if let maxPendingWrites { configuration.maxPendingWrites = maxPendingWrites }
        })
    }

    var domain: VenuesDomain { instance(of: VenuesDomain.self) }

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
}
