import DomainSeam
import Foundation
import GRDB
import HubbubTestSupport
import Logging
import Realtime
import RoomLog
import RouteService
import Storage
import Synchronization
import TransitService
import WebSocket
import XCTest

/// The routes and transit domains, on one store, in the shared in-process harness.
extension DomainHarness {
    /// The routes and transit domains (in that order) on a new temporary store; `settings` by key.
    static func routesAndTransit(settings: [String: SettingValueBox] = [:]) throws -> DomainHarness {
        try DomainHarness([RoutesDomain.self, TransitDomain.self], label: "hubbub-transit", settings: settings)
    }

    var routes: RoutesDomain { instance(of: RoutesDomain.self) }
    var transit: TransitDomain { instance(of: TransitDomain.self) }

    /// `route.subscribe` from `from` to `to` as user `u<slot>` over `member`; its reply.
    func subscribe(_ member: ConnectionID, from: (Double, Double), to: (Double, Double), widthMeters: Double = 200) async throws -> JSON {
        let args: JSON = ["from": ["lat": .double(from.0), "lon": .double(from.1)], "to": ["lat": .double(to.0), "lon": .double(to.1)],
                          "widthMeters": .double(widthMeters)]
        return try await reply("route.subscribe", args, user: "u\(member.slot)", member: member)
    }
}
