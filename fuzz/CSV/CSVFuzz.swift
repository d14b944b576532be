// libFuzzer target for GTFS feeds (Sources/Domains/Transit/Rules): `CSVReader` alone, and `GTFSReader` over
// it: .build-fuzz/fuzz-csv. A feed's files arrive inflated from a zip in chunks of any size.
//
// Input: [mode][CSV limits][GTFS limits][cut seed] then the text. Mode bit 0 picks the target;
// a limits byte with its top bit set makes small limits (else the defaults).
//   CSV: the text is one file.
//   GTFS: the text is agency, stops, routes, trips and stop_times, separated by 0x1E bytes.
//
// Invariants:
// - the same bytes give the same events (records, refusals, lines) whatever the pieces they come
//   in and whichever `feed` takes them (the buffer one skips through unquoted runs, the sequence
//   one goes byte by byte);
// - no record has more fields or a longer field than the limits; lines only go forward;
// - records written back as RFC 4180 (every field quoted) read back as the same fields;
// - GTFS: split feeds give the same network and rejects; the network holds only what it should
//   (stops located, known route types, each route's stops sorted, existing and once), within
//   the limits; a network rebuilt from its stored form gives every trip the same route.

import Transit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = Input(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    let mode = input.byte(), csvByte = input.byte(), gtfsByte = input.byte(), cutSeed = input.byte()
    var csvLimits = CSVReader.Limits()
    if csvByte & 0x80 != 0 {
        csvLimits.maxFieldBytes = 1 + Int(csvByte % 32)
        csvLimits.maxFields = 1 + Int(csvByte >> 2 & 0xF)
    }
    if mode & 1 == 0 {
        fuzzCSV(input.rest, limits: csvLimits, cutSeed: cutSeed)
    } else {
        var gtfsLimits = GTFSReader.Limits()
        if gtfsByte & 0x80 != 0 {
            gtfsLimits.maxStops = 1 + Int(gtfsByte & 7)
            gtfsLimits.maxRoutes = 1 + Int(gtfsByte >> 3 & 3)
            gtfsLimits.maxTrips = 1 + Int(gtfsByte >> 5 & 3)
            gtfsLimits.maxRejectsKept = Int(gtfsByte & 3)
        }
        fuzzGTFS(input.rest, csvLimits: csvLimits, limits: gtfsLimits, cutSeed: cutSeed)
    }
    return 0
}

// MARK: CSV

/// Reads `pieces` with `CSVReader`, alternating between its two `feed`s as `seed`'s bits say.
func read(_ pieces: [ArraySlice<UInt8>], limits: CSVReader.Limits, seed: UInt8) -> [CSVReader.Event] {
    var reader = CSVReader(limits: limits)
    var events: [CSVReader.Event] = []
    for (i, piece) in pieces.enumerated() {
        if seed >> (i % 8) & 1 == 0 {
            events += piece.withUnsafeBytes { reader.feed($0) }
        } else {
            events += reader.feed(piece)
        }
    }
    return events + reader.finish()
}

func fuzzCSV(_ text: [UInt8], limits: CSVReader.Limits, cutSeed: UInt8) {
    let whole = read([text[...]], limits: limits, seed: 0)
    check(read([text[...]], limits: limits, seed: 0xFF) == whole, "the sequence feed differs from the buffer feed")
    let split = read(pieces(text, seed: cutSeed), limits: limits, seed: cutSeed)
    check(split == whole, "split feed differs from whole feed")

    let lineEnds = text.reduce(0) { $0 + ($1 == 0x0A || $1 == 0x0D ? 1 : 0) }
    var lastLine = 0
    var records: [CSVRecord] = []
    for event in whole {
        switch event {
        case .record(let r):
            check(r.count >= 1 && r.count <= limits.maxFields, "\(r.count) fields, limit \(limits.maxFields)")
            for i in 0..<r.count { check(r.bytes(i).count <= limits.maxFieldBytes, "field of \(r.bytes(i).count) bytes, limit \(limits.maxFieldBytes)") }
            check(r.line > lastLine && r.line <= lineEnds + 1, "record on line \(r.line) after line \(lastLine)")
            lastLine = r.line
            records.append(r)
        case .refused(let line, _):
            check(line > lastLine && line <= lineEnds + 1, "refusal on line \(line) after line \(lastLine)")
            lastLine = line
        }
    }

    // Written back with every field quoted, the records read back as themselves.
    var written: [UInt8] = []
    for r in records {
        for i in 0..<r.count {
            if i > 0 { written.append(UInt8(ascii: ",")) }
            written.append(UInt8(ascii: "\""))
            for b in r.bytes(i) { written += b == UInt8(ascii: "\"") ? [b, b] : [b] }
            written.append(UInt8(ascii: "\""))
        }
        written.append(0x0A)
    }
    let reread = read([written[...]], limits: limits, seed: 0)
    check(reread.count == records.count, "\(records.count) records written back read as \(reread.count) events")
    for (event, r) in zip(reread, records) {
        guard case .record(let back) = event else { fatalError("invariant broken: a record written back is refused: \(event)") }
        check(back.count == r.count && (0..<r.count).allSatisfy { back.bytes($0).elementsEqual(r.bytes($0)) },
              "a record written back reads as other fields: \(back.fields) vs \(r.fields)")
    }
}

// MARK: GTFS

/// What reading a feed gave, compared whole.
struct FeedResult: Equatable {
    var network: TransitNetwork
    var rejects: [GTFSReject]
    var rejectCount: Int
    var trips: [String: String]
}

func readFeed(_ files: [[UInt8]], csvLimits: CSVReader.Limits, limits: GTFSReader.Limits, cutSeed: UInt8?) -> FeedResult {
    var gtfs = GTFSReader(limits: limits)
    for (file, text) in zip(GTFSFile.allCases, files) {
        gtfs.begin(file)
        let events = read(cutSeed.map { pieces(text, seed: $0) } ?? [text[...]], limits: csvLimits, seed: cutSeed ?? 0)
        for event in events {
            switch event {
            case .record(let r): gtfs.take(r)
            case .refused(let line, let reason): gtfs.refused(line: line, reason: reason)
            }
        }
    }
    let network = gtfs.finished()
    var trips: [String: String] = [:]
    for (trip, route) in network.trips { trips[trip] = route }
    return FeedResult(network: network, rejects: gtfs.rejects, rejectCount: gtfs.rejectCount, trips: trips)
}

func fuzzGTFS(_ text: [UInt8], csvLimits: CSVReader.Limits, limits: GTFSReader.Limits, cutSeed: UInt8) {
    let files = text.split(separator: 0x1E, maxSplits: 4, omittingEmptySubsequences: false).map(Array.init)
    let whole = readFeed(files, csvLimits: csvLimits, limits: limits, cutSeed: nil)
    let split = readFeed(files, csvLimits: csvLimits, limits: limits, cutSeed: cutSeed)
    check(split == whole, "split feed reads as another network or other rejects")

    let n = whole.network
    check(whole.rejects.count <= limits.maxRejectsKept && whole.rejectCount >= whole.rejects.count, "rejects kept \(whole.rejects.count)")
    check(n.stops.count <= limits.maxStops && n.routes.count <= limits.maxRoutes && n.tripCount <= limits.maxTrips, "over a limit")
    for (id, stop) in n.stops {
        check(stop.id == id && !id.isEmpty, "stop \(id) filed as \(stop.id)")
        check(stop.lat.isFinite && abs(stop.lat) <= 90 && stop.lon.isFinite && abs(stop.lon) <= 180, "stop \(id) at \(stop.lat), \(stop.lon)")
    }
    for (id, route) in n.routes {
        check(route.id == id && !id.isEmpty, "route \(id) filed as \(route.id)")
        check(TransitRoute.typeName(route.type) != nil || (100...1799).contains(route.type), "route \(id) of type \(route.type)")
    }
    for (route, stops) in n.stopsOfRoute {
        check(n.routes[route] != nil, "stops of an unknown route \(route)")
        check(!stops.isEmpty && zip(stops, stops.dropFirst()).allSatisfy { $0 < $1 }, "stops of \(route) not sorted and distinct")
        check(stops.allSatisfy { n.stops[$0] != nil }, "route \(route) serves an unknown stop")
    }
    for (trip, route) in whole.trips {
        check(n.routes[route] != nil, "trip \(trip) on an unknown route \(route)")
        check(n.route(ofTrip: trip) == route, "trip \(trip) looked up as another route")
    }
    // The network as stored and loaded again.
    let stored = TransitNetwork(agencies: n.agencies, stops: n.stops, routes: n.routes, stopsOfRoute: n.stopsOfRoute,
                                tripRoutes: whole.trips.map { (trip: $0.key, route: $0.value) })
    check(stored.tripCount == n.tripCount && whole.trips.allSatisfy { stored.route(ofTrip: $0.key) == $0.value }, "stored network differs")
}
