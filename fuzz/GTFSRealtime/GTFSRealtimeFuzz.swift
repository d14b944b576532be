// libFuzzer target for GTFS-Realtime alerts (Sources/Domains/Transit/Feeds over SwiftProtobuf's runtime),
// what operators post and what the poller fetches: .build-fuzz/fuzz-gtfs-rt.
//
// Input: the bytes of a FeedMessage (or anything else).
//
// Invariants:
// - decoding never traps: bytes are a message or a `Failure`;
// - a decoded message accounts for every entity exactly as the wire says, read by `wireFields`
//   rather than SwiftProtobuf: a header is there, the timestamp is the header's last one, each
//   entity with an id is an alert (deleted or not) or refused by its id, each without one
//   refused by its position, in order;
// - the message SwiftProtobuf read, written again, decodes to the same alerts;
// - every alert placed on a small network lands on its stops only, with a body, expiring at the
//   end of its last period.

import SwiftProtobuf
import Transit
import TransitFeeds

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let message: GTFSRealtimeDecoder.Message
    do throws(GTFSRealtimeDecoder.Failure) {
        message = try GTFSRealtimeDecoder.decode(bytes)
    } catch {
        return 0
    }
    checkAgainstWire(message, bytes)
    checkRewritten(message, bytes)
    for alert in message.alerts where !alert.isDeleted { checkPlaced(alert) }
    return 0
}

/// The decoded message against what the wire says it holds; nothing is checked where the wire
/// cannot say (a field of an unexpected wire type, which SwiftProtobuf may keep as unknown).
func checkAgainstWire(_ message: GTFSRealtimeDecoder.Message, _ bytes: [UInt8]) {
    guard let top = wireFields(bytes[...]) else { return }
    let headers = top.filter { $0.number == 1 }, entities = top.filter { $0.number == 2 }
    guard headers.allSatisfy({ $0.wireType == 2 }), entities.allSatisfy({ $0.wireType == 2 }) else { return }
    check(!headers.isEmpty, "decoded a message without a header")
    var timestamp: UInt64?
    for header in headers {
        guard let fields = wireFields(header.bytes) else { return }
        for f in fields where f.number == 3 {
            guard f.wireType == 0 else { return }
            timestamp = f.integer
        }
    }
    check(message.timestamp == timestamp, "timestamp \(String(describing: message.timestamp)), the wire says \(String(describing: timestamp))")
    var alerts: [(id: String, deleted: Bool)] = [], refused: [String] = []
    for (i, entity) in entities.enumerated() {
        guard let fields = wireFields(entity.bytes) else { return }
        var id: String?, deleted = false, hasAlert = false
        for f in fields {
            switch f.number {
            case 1: guard f.wireType == 2 else { return }; id = String(decoding: f.bytes, as: UTF8.self)
            case 2: guard f.wireType == 0 else { return }; deleted = f.integer != 0
            case 5: guard f.wireType == 2 else { return }; hasAlert = true
            default: break
            }
        }
        if let id, !id.isEmpty {
            if deleted || hasAlert { alerts.append((id, deleted)) } else { refused.append(id) }
        } else {
            refused.append("entity \(i + 1)")
        }
    }
    check(message.alerts.map(\.id) == alerts.map(\.id) && message.alerts.map(\.isDeleted) == alerts.map(\.deleted),
          "alerts \(message.alerts.map(\.id)), the wire says \(alerts)")
    check(message.refused.map(\.entity) == refused, "refused \(message.refused.map(\.entity)), the wire says \(refused)")
}

func checkRewritten(_ message: GTFSRealtimeDecoder.Message, _ bytes: [UInt8]) {
    do {
        let feed = try TransitRealtime_FeedMessage(serializedBytes: bytes)
        let written: [UInt8] = try feed.serializedBytes()
        let reread = try TransitRealtime_FeedMessage(serializedBytes: written), redecoded = try GTFSRealtimeDecoder.decode(written)
        check(reread == feed, "the message written again reads differently")
        check(redecoded == message, "the message written again decodes to other alerts")
    } catch {
        fatalError("invariant broken: a message that decoded cannot be written and read again: \(error)")
    }
}

/// A small network: route R1 (tram) serves stops A and B, route R2 (bus) B and C; trip T1 runs on R1.
let network: TransitNetwork = {
    var n = TransitNetwork()
    n.agencies = [TransitAgency(id: "X", name: "City", timeZone: "Europe/Istanbul", language: "tr")]
    for (id, lat) in [("A", 41.0), ("B", 41.01), ("C", 41.02)] { n.stops[id] = TransitStop(id: id, name: id, lat: lat, lon: 28.9, parent: nil) }
    n.routes["R1"] = TransitRoute(id: "R1", shortName: "1", longName: nil, type: 0, agency: "X")
    n.routes["R2"] = TransitRoute(id: "R2", shortName: "2", longName: nil, type: 3, agency: "X")
    n.stopsOfRoute = ["R1": ["A", "B"], "R2": ["B", "C"]]
    n.setRoute("R1", ofTrip: "T1")
    return n
}()

func checkPlaced(_ alert: TransitAlert) {
    guard case .success(let placed) = PlacedAlert.place(alert, in: network) else { return }
    let located = Set(network.stops.values.map { "\($0.lat),\($0.lon)" })
    check(!placed.points.isEmpty && placed.points.allSatisfy { located.contains("\($0.lat),\($0.lon)") }, "placed off the network's stops")
    check(Set(placed.points.map { "\($0.lat),\($0.lon)" }).count == placed.points.count, "a stop placed twice")
    check(!placed.body.isEmpty, "placed without a body")
    let ends = alert.activePeriods.map(\.end)
    if let expires = placed.expiresAt {
        check(ends.allSatisfy { $0 != nil } && expires == Double(ends.compactMap { $0 }.max()!), "expires at \(expires), periods end \(ends)")
    } else {
        check(ends.isEmpty || ends.contains { $0 == nil }, "no expiry, though every period ends")
    }
}
