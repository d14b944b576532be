import DomainSeam
import Foundation
import Realtime
import Routes

/// `POST /api/intel` (feeds.md): a provider's items, `{"items": [{lat, lon, kind, body, tags?,
/// modes?, at?, source}]}`. Each item is validated like `intel.post` (plus its `source`); a bad one
/// is rejected with its reason and the rest are added in one durable write, then pushed to every
/// live corridor containing them. The answer counts them (`added`, `rejected`, `rejects`, `ms`).
struct ProviderIntel: Sendable {
    let hub: IntelHub
    let directory: CorridorDirectory
    let sink: any PushSink
    let maxBodyBytes: Int
    let maxItems: Int

    /// At most this many rejects are listed (all are counted).
    static let listedRejects = 100

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/intel", maxBodyBytes: maxBodyBytes) { request in await handle(request) }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = Date()
        let bytes: [UInt8]
        do {
            bytes = try await request.body.collect(upTo: maxBodyBytes)
        } catch is RequestBody.TooLarge {
            return .error(413, "the body is larger than \(maxBodyBytes) bytes (routes.maxProviderBodyBytes)")
        } catch {
            return .error(400, "the body did not arrive: \(error)") // the transport has answered already
        }
        let json: JSON
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            return .error(400, "not JSON: \(error.reason)", [("offset", .int(error.offset))])
        }
        guard case .array(let items)? = json["items"] else { return .error(400, "field items must be an array of items") }
        guard items.count <= maxItems else {
            return .error(413, "at most \(maxItems) items per request (routes.maxProviderItems); this one has \(items.count)")
        }
        let now = started.timeIntervalSince1970
        var drafts: [(index: Int, draft: IntelHub.Draft, author: IntelItem.Author)] = []
        var rejects: [(index: Int, reason: String)] = []
        for (i, item) in items.enumerated() {
            do throws(ProtocolError) {
                let (draft, source) = try Self.parse(item)
                drafts.append((i, draft, .provider(source: source)))
            } catch {
                rejects.append((i, error.message))
            }
        }
        let results: [Result<IntelItem, ProtocolError>]
        do {
            results = try await hub.post(drafts.map { ($0.draft, $0.author) }, now: now)
        } catch {
            return HTTPResponse(status: 503, contentType: "application/json",
                                body: Array((JSON.object([("error", .string(error.message))]).encoded + "\n").utf8), headers: [("Retry-After", "1")])
        }
        var added: [IntelItem] = []
        for (d, result) in zip(drafts, results) {
            switch result {
            case .success(let item): added.append(item)
            case .failure(let error): rejects.append((d.index, error.message))
            }
        }
        for item in added {
            for corridor in directory.corridors(containing: item.point) { await corridor.publish(.added, item: item, aliases: [:]) }
            // One item's pushes at a time: travellers' pushes queued meanwhile go out in between.
            await sink.settle()
        }
        rejects.sort { $0.index < $1.index }
        let listed = rejects.prefix(Self.listedRejects).map { r -> JSON in
            ["record": .string("items[\(r.index)]"), "reason": .string(r.reason)]
        }
        return .json(200, ["added": .int(added.count), "changed": 0, "unchanged": 0, "rejected": .int(rejects.count),
                           "rejects": .array(listed), "ids": .array(added.map { .string($0.id) }),
                           "ms": .int(Int(Date().timeIntervalSince(started) * 1000))])
    }

    /// One item of the body: the fields of `intel.post`, `at` as a number or an ISO 8601 time, and `source`.
    static func parse(_ item: JSON) throws(ProtocolError) -> (IntelHub.Draft, source: String) {
        guard case .object = item else { throw .badRequest("an item must be an object") }
        let a = Args(item)
        let source = try a.string("source", maxLength: 64)
        guard !source.isEmpty, source.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || $0.properties.numericType != nil || "-_. ".unicodeScalars.contains($0) })
        else { throw .badRequest("field source must be a name of letters, digits, spaces and -_.") }
        let at: Double?
        switch item["at"] {
        case nil, .null?: at = nil
        case .string(let text)?:
            guard let time = Self.time(text) else { throw .badRequest("field at: \(text) is not an ISO 8601 time such as 2026-11-22T17:05:00Z") }
            at = time
        default: at = try a.optionalDouble("at")
        }
        return (try IntelPostArgs.draft(a, at: at), source)
    }

    /// Seconds since 1970 of an ISO 8601 time with a zone, with or without fractional seconds.
    static func time(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
