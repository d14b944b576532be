import Foundation
import LoadHarness
import Realtime
import Routes
import Synchronization

/// The transit operator of a rush hour: every `providerBurstSeconds` it posts
/// `providerBurstItems` items with `POST /api/intel` (`Authorization: Bearer <api key>`), on its
/// own thread with a blocking HTTP client so a slow answer never stalls the client loops. Its items
/// go into the same ledger as the travellers' posts: the travellers time them and the delivery
/// audit expects them like any other. Its counts go to the first loop's meter.
final class ProviderPoster: @unchecked Sendable {
    private let settings: Scenario.RouteSettings
    private let plan: CommutePlan
    private let ledger: PostLedger
    private let http: HTTPPost
    private let apiKey: String
    private let fleet: ClientFleet
    private let runTag: String
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    init(settings: Scenario.RouteSettings, plan: CommutePlan, ledger: PostLedger, host: String, port: Int, apiKey: String,
         fleet: ClientFleet, runTag: String) {
        self.settings = settings
        self.plan = plan
        self.ledger = ledger
        http = HTTPPost(host: host, port: port)
        self.apiKey = apiKey
        self.fleet = fleet
        self.runTag = runTag
    }

    /// Starts posting: the first burst one period from now.
    func start() {
        let thread = Thread { [self] in
            var rng = SystemRandomNumberGenerator()
            var burst = 0
            let start = Date()
            var next = settings.providerBurstSeconds
            while running.load(ordering: .relaxed) {
                if Date().timeIntervalSince(start) >= next {
                    next += settings.providerBurstSeconds
                    post(burst: burst, &rng)
                    burst += 1
                }
                Thread.sleep(forTimeInterval: 0.01)
            }
            finished.signal()
        }
        thread.name = "provider"
        thread.start()
    }

    /// Stops after the burst in flight, if any.
    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }

    private func post(burst: Int, _ rng: inout SystemRandomNumberGenerator) {
        let n = settings.providerBurstItems
        let at = Date().timeIntervalSince1970
        var items: [JSON] = []
        var points: [(UInt64, GeoPoint)] = []
        for k in 0..<n {
            let point = plan.providerPoint(using: &rng)
            let body = "Service notice \(runTag)-b\(burst)-\(k): delays on the line"
            points.append((nameHash(body), point))
            let mode = Self.modes[Int.random(in: 0..<Self.modes.count, using: &rng)]
            items.append(["lat": .double(point.lat), "lon": .double(point.lon), "kind": "disruption", "body": .string(body),
                          "tags": ["service"], "modes": [mode], "at": .double(at), "source": .string(settings.providerSource)])
        }
        let payload = Array(JSON.object([("items", .array(items))]).encoded.utf8)
        // Recorded before sending: a push may arrive before the answer.
        let sentAt = Clock.nanos()
        let indexes = points.map { ledger.sent(key: $0.0, point: $0.1, at: sentAt, byProvider: true) }
        var accepted = 0
        var problem: String?
        do {
            let response = try http.post(path: "/api/intel", headers: [("Authorization", "Bearer \(apiKey)")], body: payload)
            let ackedAt = Clock.nanos()
            if (200..<300).contains(response.status) {
                if let rejected = Self.rejectedIndexes(response.body, count: n) {
                    for (k, index) in indexes.enumerated() where !rejected.contains(k) {
                        ledger.acked(index, at: ackedAt)
                        accepted += 1
                    }
                    if !rejected.isEmpty { problem = "POST /api/intel: rejected" }
                } else {
                    problem = "POST /api/intel: unreadable answer"
                }
            } else {
                problem = "POST /api/intel: \(response.status)"
            }
        } catch {
            problem = "POST /api/intel: \(String(error.description.prefix(50)))"
        }
        let failed = n - accepted
        let meter = fleet.meter(0)
        fleet.loop(0).execute { [accepted, problem] _ in
            meter.now.sent += n
            meter.now.acked += accepted
            if let problem, failed > 0 { meter.now.errors[problem, default: 0] += failed }
        }
    }

    static let modes: [JSON] = ["transit", "car", "walk", "cycle"]

    /// The items an answer says were refused, by their place in the request (feeds.md: `rejected`
    /// counts them, `rejects` names the first 100 as `{"record": "items[3]", "reason": ...}`); nil
    /// when the answer cannot say which were refused (then none counts as posted).
    static func rejectedIndexes(_ body: [UInt8], count: Int) -> Set<Int>? {
        guard let answer = try? JSONParser.parse(body), case .object = answer, case .int(let rejected)? = answer["rejected"] else { return nil }
        guard rejected > 0 else { return [] }
        guard case .array(let list)? = answer["rejects"], list.count == rejected else { return nil }
        var out: Set<Int> = []
        for entry in list {
            guard case .string(let record)? = entry["record"], record.hasPrefix("items["), record.hasSuffix("]"),
                  let i = Int(record.dropFirst(6).dropLast()), i < count else { return nil }
            out.insert(i)
        }
        return out
    }
}
