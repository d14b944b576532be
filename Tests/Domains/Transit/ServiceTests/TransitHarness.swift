import DomainSeam
import Foundation
import GRDB
import Logging
import Realtime
import RoomLog
import RouteService
import Storage
import Synchronization
import TransitService
import WebSocket
import HubbubTestSupport
import XCTest

/// Each test connection's reader language.
final class FakeLanguages: ReaderLanguages {
    let tags = Mutex<[ConnectionID: String]>([:])
    func language(of member: ConnectionID) -> String? { tags.withLock { $0[member] } }
}

/// The routes and transit domains on one store in a temporary directory, driven without sockets.
final class TransitHarness: @unchecked Sendable {
    let sink = RecordingSink()
    let languages = FakeLanguages()
    let store: Store
    let routes: RoutesDomain
    let transit: TransitDomain
    let directory: String
    private let nextID = Atomic<Int>(1)
    private let nextSlot = Atomic<Int32>(1)

    init(directory: String = NSTemporaryDirectory() + "hubbub-transit-\(UUID().uuidString)", settings: [String: SettingValueBox] = [:]) throws {
        self.directory = directory
        var migrator = SQLMigrations()
        RoomLogSchema.migrations(&migrator)
        RoutesDomain.migrations(&migrator)
        TransitDomain.migrations(&migrator)
        store = try Store(configuration: Store.Configuration(directory: directory), migrations: migrator)
        let capabilities = Capabilities()
        capabilities.provide(ReaderLanguages.self, languages)
        let context = DomainContext(store: store, sink: sink, settings: SettingValues(settings), roomHistory: .init(),
                                    capabilities: capabilities, logger: Logger(label: "test"), dataDirectory: directory)
        routes = try RoutesDomain(context: context)
        transit = try TransitDomain(context: context)
        let logged = Dictionary(uniqueKeysWithValues: routes.rooms.map { ($0.prefix, $0) })
        capabilities.provide(LoggedRooms.self, LoggedRoomJoin(logged: logged, feed: context.feed, owners: nil))
        let languages = self.languages
        context.feed.setReaderLanguage { languages.language(of: $0) }
    }

    deinit { store.close() }

    func connection(language: String? = nil) -> ConnectionID {
        let member = ConnectionID(loop: 0, slot: nextSlot.add(1, ordering: .relaxed).oldValue, generation: 1)
        if let language { languages.tags.withLock { $0[member] = language } }
        return member
    }

    /// POSTs `body` to the transit endpoint at `path` (with its query); the status and the JSON answer.
    func post(_ target: String, _ body: [UInt8]) async throws -> (Int, JSON) {
        let path = String(target.split(separator: "?")[0])
        guard let endpoint = transit.endpoints.first(where: { $0.path == path }) else { throw TestError("no endpoint \(path)") }
        let response = await endpoint.handle(HTTPRequest(method: "POST", target: target, body: RequestBody(body)))
        return (response.status, try JSONParser.parse(response.body))
    }

    /// `route.subscribe` from `from` to `to` as `user` over `member`; its reply.
    func subscribe(_ member: ConnectionID, from: (Double, Double), to: (Double, Double), widthMeters: Double = 200) async throws -> JSON {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let op = routes.ops.first { $0.name == "route.subscribe" }!
        let args: JSON = ["from": ["lat": .double(from.0), "lon": .double(from.1)], "to": ["lat": .double(to.0), "lon": .double(to.1)],
                          "widthMeters": .double(widthMeters)]
        _ = try await op.run(Args(args), OpCall(requestID: id, user: "u\(member.slot)", session: FakeSession(member),
                                                reply: Replier(member: member, requestID: id, sink: sink)))
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let reply = sink.replies(member).first(where: { $0["id"] == .int(id) }) { return reply }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestError("no reply to route.subscribe")
    }

    /// Waits until `member` has `count` pushes; returns them.
    func pushes(_ member: ConnectionID, count: Int, within seconds: Double = 5) async throws -> [JSON] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let got = sink.pushes(member)
            if got.count >= count { return got }
            try await Task.sleep(for: .milliseconds(5))
        }
        return sink.pushes(member)
    }
}
