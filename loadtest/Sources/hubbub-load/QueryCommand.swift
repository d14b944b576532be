import ArgumentParser
import Foundation
import HubbubClient
import Histogram
import LoadHarness
import Realtime
import WebSocket

/// `query`: `intel.query` latency against a running server holding many live items. Posts
/// `--items` items at random points of a city (through the protocol, pipelined), then times
/// `--queries` queries one after another, each over a random box from a district to the whole city,
/// and the worst case (the whole city box) separately. Start the server with write limits high
/// enough for the posting (e.g. `--rate-limits-write-burst 1000000 --rate-limits-write-per-second 1000000`).
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "query", abstract: "intel.query latency with many live items.")

    @Option(help: "Server base URL (ws://host:port).") var url: String
    @Option(help: "Live items to post first.") var items = 100_000
    @Option(help: "Queries to time.") var queries = 2_000
    @Option(help: "Requests in flight while posting.") var window = 256
    @Option(help: "Seed of the random points and boxes.") var seed: UInt64 = 1

    /// Amsterdam and around: 0.12° of latitude by 0.20° of longitude (about 13 × 14 km).
    static let city = (minLat: 52.30, maxLat: 52.42, minLon: 4.78, maxLon: 4.98)

    func run() async throws {
        var random = SeededGenerator(seed: seed)
        let client = try await RequestClient(url: url)
        let name = "query-bench-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await client.ok("account.signup", ["username": .string(name), "email": .string("\(name)@load.test"), "password": "load-pass-1"])

        let c = Self.city
        let posting = ContinuousClock.now
        var sent = 0, failed = 0
        while sent < items {
            let batch = min(window, items - sent)
            let replies = try await client.pipelined((0..<batch).map { i in
                ("intel.post", ["lat": .double(random.uniform(c.minLat, c.maxLat)), "lon": .double(random.uniform(c.minLon, c.maxLon)),
                                "kind": (sent + i) % 3 == 0 ? "disruption" : "poi", "modes": (sent + i) % 2 == 0 ? ["walk"] : ["car", "transit"],
                                "body": .string("item \(sent + i) #bench")] as JSON)
            })
            failed += replies.filter { $0["ok"] != .bool(true) }.count
            sent += batch
        }
        let postSeconds = Self.seconds(ContinuousClock.now - posting)
        print("posted \(items) items in \(String(format: "%.1f", postSeconds)) s (\(Int(Double(items) / postSeconds))/s), \(failed) refused")
        guard failed == 0 else { throw ValidationError("posting was refused \(failed) times: raise the server's write rate limits") }

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var returned = 0, truncated = 0
        for _ in 0..<queries {
            let height = random.uniform(0.005, c.maxLat - c.minLat), width = random.uniform(0.005, c.maxLon - c.minLon)
            let minLat = random.uniform(c.minLat, c.maxLat - height), minLon = random.uniform(c.minLon, c.maxLon - width)
            let started = ContinuousClock.now
            let r = try await client.ok("intel.query", ["minLat": .double(minLat), "minLon": .double(minLon),
                                                         "maxLat": .double(minLat + height), "maxLon": .double(minLon + width)])
            histogram.record(UInt64(Self.seconds(ContinuousClock.now - started) * 1e6))
            if case .array(let list)? = r["items"] { returned += list.count }
            if r["truncated"] == .bool(true) { truncated += 1 }
        }
        print("intel.query, \(queries) random boxes (0.005° up to the whole city) over \(items) live items: "
              + Self.percentiles(histogram) + ", \(returned / max(1, queries)) items returned on average, \(truncated) truncated at the limit")

        var whole = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        for _ in 0..<max(1, queries / 10) {
            let started = ContinuousClock.now
            _ = try await client.ok("intel.query", ["minLat": .double(c.minLat), "minLon": .double(c.minLon),
                                                     "maxLat": .double(c.maxLat), "maxLon": .double(c.maxLon)])
            whole.record(UInt64(Self.seconds(ContinuousClock.now - started) * 1e6))
        }
        print("intel.query, the whole city box (every live item in it, the newest 500 answered), \(max(1, queries / 10)) times: "
              + Self.percentiles(whole))
    }

    static func percentiles(_ h: Histogram<UInt64>) -> String {
        func ms(_ p: Double) -> String { String(format: "%.2f", Double(h.valueAtPercentile(p)) / 1000) }
        return "p50 \(ms(50)) ms, p90 \(ms(90)) ms, p99 \(ms(99)) ms, max \(String(format: "%.2f", Double(h.max) / 1000)) ms"
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
}

/// Requests over one `/ws` connection: one at a time, or a window of them pipelined.
final class RequestClient: @unchecked Sendable {
    private let ws: WebSocketClient
    private var nextID = 1

    init(url: String) async throws {
        var options = WebSocketClient.Options()
        options.subprotocols = ["hubbub.v1"]
        ws = try await WebSocketClient.connect(to: url + "/ws", options: options)
    }

    /// Sends every request, then gathers the replies (in request order); pushes are skipped.
    func pipelined(_ requests: [(String, JSON)]) async throws -> [JSON] {
        let first = nextID
        for (op, args) in requests {
            ws.send(text: JSON.object([("id", .int(nextID)), ("op", .string(op)), ("args", args)]).encoded)
            nextID += 1
        }
        var replies = [JSON?](repeating: nil, count: requests.count), pending = requests.count
        while pending > 0 {
            guard let event = await ws.nextEvent() else { throw ValidationError("the connection closed") }
            guard case .message(let m) = event, let reply = try? JSONParser.parse(m.data),
                  case .int(let id)? = reply["id"], id >= first, id - first < requests.count, replies[id - first] == nil else { continue }
            replies[id - first] = reply
            pending -= 1
        }
        return replies.map { $0! }
    }

    func ok(_ op: String, _ args: JSON) async throws -> JSON {
        let reply = try await pipelined([(op, args)])[0]
        guard reply["ok"] == .bool(true), let result = reply["result"] else { throw ValidationError("\(op): \(reply.encoded)") }
        return result
    }
}

extension SeededGenerator {
    /// A number in `low..<high`, evenly spread.
    mutating func uniform(_ low: Double, _ high: Double) -> Double { low + unit() * (high - low) }
}
