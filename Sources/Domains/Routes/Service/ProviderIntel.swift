import DomainSeam
import Foundation
import Realtime
import Routes

/// `POST /api/intel` (feeds.md): a provider's items, `{"items": [{lat, lon, kind, body, tags?,
/// modes?, at?, source}]}`. Each item is validated like `intel.post` (plus its `source`); a bad one
/// is rejected with its reason and the rest are added, each shard's in one durable write on that
/// shard's owner (here or over the link), with their pushes to every live corridor containing
/// them. The answer counts them (`added`, `rejected`, `rejects`, `ms`).
struct ProviderIntel: Sendable {
    let hub: IntelHub
    let maxBodyBytes: Int
    let maxItems: Int

    var endpoint: HTTPEndpoint {
        // Served on whichever node receives it: each shard's part goes to its owner.
        HTTPEndpoint("POST", "/api/intel", maxBodyBytes: maxBodyBytes) { request in await handle(request) }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        var report = IngestReport()
        let (body, refusal) = await request.wholeBody(upTo: maxBodyBytes, setting: "routes.maxProviderBodyBytes")
        guard let bytes = body else { return refusal! }
        let json: JSON
        do {
            // An item is a few dozen values (its tags and modes are bounded): room for maxItems of them.
            json = try JSONParser.parse(bytes, limits: JSONParser.Limits(maxValues: maxItems * 256 + 16))
        } catch {
            return .error(error.isLimit ? 413 : 400, "not JSON: \(error.reason)", [("offset", .int(error.offset))])
        }
        guard case .array(let items)? = json["items"] else { return .error(400, "field items must be an array of items") }
        guard items.count <= maxItems else {
            return .error(413, "at most \(maxItems) items per request (routes.maxProviderItems); this one has \(items.count)")
        }
        let now = report.started.timeIntervalSince1970
        var drafts: [(index: Int, draft: IntelHub.Draft, author: IntelItem.Author)] = []
        var rejects: [(index: Int, reason: String)] = []
        let times = ISOTimes()
        for (i, item) in items.enumerated() {
            do throws(ProtocolError) {
                let (draft, source) = try Self.parse(item, times: times)
                drafts.append((i, draft, .provider(source: source)))
            } catch {
                rejects.append((i, error.message))
            }
        }
        let results = await hub.post(drafts.map { ($0.draft, $0.author) }, now: now)
        // Nothing written, for want of the store or the shards' owners: the provider sends it again.
        let failures = results.compactMap { if case .failure(let e) = $0 { e } else { nil } }
        if !results.isEmpty, failures.count == results.count, failures.allSatisfy({ $0.code == .unavailable }), let first = failures.first {
            return .error(503, first.message, headers: [("Retry-After", "1")])
        }
        var added: [IntelItem] = []
        for (d, result) in zip(drafts, results) {
            switch result {
            case .success(let posted): added.append(posted.item)
            case .failure(let error): rejects.append((d.index, error.message))
            }
        }
        report.added = added.count
        report.rejects = rejects.sorted { $0.index < $1.index }.map { .init(record: "items[\($0.index)]", reason: $0.reason) }
        return .json(200, .object(report.fields([("ids", .array(added.map { .string($0.id) }))])))
    }

    /// One item of the body: the fields of `intel.post`, `at` as a number or an ISO 8601 time, and `source`.
    static func parse(_ item: JSON, times: ISOTimes) throws(ProtocolError) -> (IntelHub.Draft, source: String) {
        guard case .object = item else { throw .badRequest("an item must be an object") }
        let a = Args(item)
        let source = try a.string("source", maxLength: 64)
        guard !source.isEmpty, source.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || $0.properties.numericType != nil || "-_. ".unicodeScalars.contains($0) })
        else { throw .badRequest("field source must be a name of letters, digits, spaces and -_.") }
        let at: Double?
        switch item["at"] {
        case nil, .null?: at = nil
        case .string(let text)?:
            guard let time = times.seconds(text) else { throw .badRequest("field at: \(text) is not an ISO 8601 time such as 2026-11-22T17:05:00Z") }
            at = time
        default: at = try a.optionalDouble("at")
        }
        return (try IntelPostArgs.draft(a, at: at), source)
    }

}

/// Reads ISO 8601 times with a zone, with or without fractional seconds. Made once per request:
/// a formatter costs far more to make than to use.
final class ISOTimes {
    private let plain = ISO8601DateFormatter()
    private let fractional: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()

    /// Seconds since 1970, or nil when `text` is not such a time.
    func seconds(_ text: String) -> Double? {
        (plain.date(from: text) ?? fractional.date(from: text))?.timeIntervalSince1970
    }
}
