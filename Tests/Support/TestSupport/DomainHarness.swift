import DomainSeam
import Foundation
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import WebSocket

/// Each test connection's reader language (stands in for the core's `ReaderLanguages`).
public final class FakeLanguages: ReaderLanguages {
    public let tags = Mutex<[ConnectionID: String]>([:])
    public init() {}
    public func language(of member: ConnectionID) -> String? { tags.withLock { $0[member] } }
}

/// Domains on a real store in a temporary directory, driven op by op and endpoint by endpoint
/// without sockets (calls may run concurrently). Wired as the server wires them, on one node: one
/// `DomainContext` (the store, a `RecordingSink`, the settings, capabilities with `ReaderLanguages`),
/// the domains built in the order given, then `LoggedRooms` over all their rooms (`owners: nil`)
/// and the feed reading each connection's language from `languages`. Migrations: the room log's,
/// then each domain's. No service runs unless a test runs it. `deinit` closes this harness's store;
/// the directory goes with the last harness sharing it (`restarted()`).
public final class DomainHarness: @unchecked Sendable {
    public let sink = RecordingSink()
    public let languages = FakeLanguages()
    /// The directory and its stores (shared with the harnesses `restarted()` makes).
    public let storage: TemporaryStore
    /// This harness's store (a restarted harness has its own, over the same files).
    public let store: Store
    public let context: DomainContext
    /// The domains, in the order given.
    public let domains: [any Domain]
    private let types: [any Domain.Type]
    private let settings: [String: SettingValueBox]
    private let nextID = Atomic<Int>(1)
    private let nextSlot = Atomic<Int32>(1)

    public var directory: String { storage.directory }

    /// Builds `types` on a new temporary store; `settings` by key (`"routes.gtfsMaxUncompressedBytes"`);
    /// `configure` adjusts the store's configuration (`maxPendingWrites`).
    public convenience init(_ types: [any Domain.Type], label: String = "hubbub-domain", settings: [String: SettingValueBox] = [:],
                            configure: (inout Store.Configuration) -> Void = { _ in }) throws {
        var migrations = SQLMigrations.of(RoomLogSchema.migrations)
        for type in types { type.migrations(&migrations) }
        let storage = try TemporaryStore(label, migrations: migrations, configure: configure)
        try self.init(storage: storage, store: storage.store, types: types, settings: settings)
    }

    private init(storage: TemporaryStore, store: Store, types: [any Domain.Type], settings: [String: SettingValueBox]) throws {
        self.storage = storage
        self.store = store
        self.types = types
        self.settings = settings
        let capabilities = Capabilities()
        capabilities.provide(ReaderLanguages.self, languages)
        let context = DomainContext(store: store, sink: sink, settings: SettingValues(settings), roomHistory: .init(),
                                    capabilities: capabilities, logger: Logger(label: "test"), dataDirectory: storage.directory)
        self.context = context
        let domains = try types.map { try $0.init(context: context) }
        self.domains = domains
        let rooms = Dictionary(uniqueKeysWithValues: domains.flatMap(\.rooms).map { ($0.prefix, $0) })
        capabilities.provide(LoggedRooms.self, LoggedRoomJoin(logged: rooms, feed: context.feed, owners: nil))
        let languages = self.languages
        context.feed.setReaderLanguage { languages.language(of: $0) }
    }

    deinit { store.close() }

    /// The same domains and settings built again over this harness's files while it stays open (a
    /// restart); both share `storage`.
    public func restarted() throws -> DomainHarness {
        try DomainHarness(storage: storage, store: try storage.openAnother(), types: types, settings: settings)
    }

    /// The domain of type `D` (it must be one of those built).
    public func instance<D: Domain>(of type: D.Type) -> D {
        for domain in domains { if let found = domain as? D { return found } }
        preconditionFailure("no \(D.self) in this harness")
    }

    /// A new connection, reading `language` if given.
    public func connection(language: String? = nil) -> ConnectionID {
        let member = ConnectionID(loop: 0, slot: nextSlot.add(1, ordering: .relaxed).oldValue, generation: 1)
        if let language { languages.tags.withLock { $0[member] = language } }
        return member
    }

    /// Runs `op` as `user` over `member` and waits up to `timeout` seconds for its reply; returns the
    /// reply's result. Throws `TestError`: "no op <op>", "<op>: <error>", "<op>: <reply>" (not ok),
    /// "<op>: no reply".
    @discardableResult
    public func call(_ op: String, _ args: JSON, user: String, member: ConnectionID, timeout: Double = 5) async throws -> JSON {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        guard let found = lookUp(op) else { throw TestError("no op \(op)") }
        let reply = Replier(member: member, requestID: id, sink: sink)
        do {
            switch try await found.run(Args(args), OpCall(requestID: id, user: user, session: FakeSession(member), reply: reply)) {
            case .reply(let result): return result
            case .sent: break
            }
        } catch {
            throw TestError("\(op): \(error)")
        }
        var replied: JSON?
        try await eventually(timeout: timeout, every: .milliseconds(2)) {
            replied = try parsedReply(id, to: member)
            return replied != nil
        }
        guard let answer = replied else { throw TestError("\(op): no reply") }
        guard answer["ok"] == .bool(true), let result = answer["result"] else { throw TestError("\(op): \(answer.encoded)") }
        return result
    }

    /// Runs `op` as `user` over `member` and returns its whole reply (`id`, `ok`, `result` or
    /// `error`), unjudged; the op's own error is thrown as it is. A `.reply(result)` outcome comes
    /// back as `{"id", "ok": true, "result"}`.
    public func reply(_ op: String, _ args: JSON, user: String, member: ConnectionID, timeout: Double = 5) async throws -> JSON {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        guard let found = lookUp(op) else { throw TestError("no op \(op)") }
        let outcome = try await found.run(Args(args), OpCall(requestID: id, user: user, session: FakeSession(member),
                                                             reply: Replier(member: member, requestID: id, sink: sink)))
        if case .reply(let result) = outcome { return .object([("id", .int(id)), ("ok", .bool(true)), ("result", result)]) }
        var answer: JSON?
        await eventually(timeout: timeout, every: .milliseconds(2)) {
            answer = sink.replies(member).first { $0["id"] == .int(id) }
            return answer != nil
        }
        guard let whole = answer else { throw TestError("no reply to \(op)") }
        return whole
    }

    /// POSTs `body` to the domains' endpoint at `target`'s path (its query kept); the status and the JSON answer.
    public func post(_ target: String, _ body: [UInt8]) async throws -> (Int, JSON) {
        let path = String(target.split(separator: "?")[0])
        guard let endpoint = domains.flatMap(\.endpoints).first(where: { $0.path == path }) else { throw TestError("no endpoint \(path)") }
        let response = await endpoint.handle(HTTPRequest(method: "POST", target: target, body: RequestBody(body)))
        return (response.status, try JSONParser.parse(response.body))
    }

    /// Messages with a `room` that `member` received, parsed, with their sizes.
    public func pushes(_ member: ConnectionID) throws -> [(json: JSON, bytes: Int)] {
        try sink.messages(member).compactMap { m in
            let json = try JSONParser.parse(m.payload)
            return json["room"] == nil ? nil : (json, m.payload.count)
        }
    }

    /// Waits up to `seconds` until `member` has `count` pushes (`RecordingSink.pushes`: messages with
    /// an `event`); returns them as they were when the count was reached, or all it has at the
    /// timeout (no failure: the caller asserts).
    public func pushes(_ member: ConnectionID, count: Int, within seconds: Double = 5) async throws -> [JSON] {
        var got: [JSON] = []
        await eventually(timeout: seconds, every: .milliseconds(5)) {
            got = sink.pushes(member)
            return got.count >= count
        }
        return got
    }

    /// The op named `name` of the first domain that has one.
    private func lookUp(_ name: String) -> Op? {
        for domain in domains {
            if let found = domain.ops.first(where: { $0.name == name }) { return found }
        }
        return nil
    }

    /// The reply to request `id` among what `member` was sent, parsed.
    private func parsedReply(_ id: Int, to member: ConnectionID) throws -> JSON? {
        for m in sink.messages(member) {
            let json = try JSONParser.parse(m.payload)
            if json["id"] == .int(id) { return json }
        }
        return nil
    }
}
