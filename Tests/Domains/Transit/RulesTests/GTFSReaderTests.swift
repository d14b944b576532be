import Transit
import XCTest

/// A GTFS feed's files read into a network: columns by name in any order, padded values, parent
/// stations, the stops each route serves from its trips' stop times, and every kind of bad row
/// refused with its file, line and reason while the rest is kept.
final class GTFSReaderTests: XCTestCase {
    /// Reads `files` (in GTFS order) through the CSV reader, in small pieces.
    func read(_ files: [GTFSFile: String], limits: GTFSReader.Limits = .init()) -> (TransitNetwork, GTFSReader) {
        var reader = GTFSReader(limits: limits)
        for file in GTFSFile.allCases {
            guard let text = files[file] else { continue }
            reader.begin(file)
            var csv = CSVReader()
            let bytes = Array(text.utf8)
            var events: [CSVReader.Event] = []
            for start in stride(from: 0, to: bytes.count, by: 5) { events += csv.feed(bytes[start..<min(bytes.count, start + 5)]) }
            events += csv.finish()
            for e in events {
                switch e {
                case .record(let r): reader.take(r)
                case .refused(let line, let reason): reader.refused(line: line, reason: reason)
                }
            }
        }
        return (reader.finished(), reader)
    }

    static let good: [GTFSFile: String] = [
        .agency: "agency_id,agency_name,agency_url,agency_timezone,agency_lang\nIETT,İETT,https://iett.example,Europe/Istanbul,tr\n",
        .stops: """
            stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station
            KAR,Karaköy,41.0224,28.9770,1,
            KAR-1, Karaköy peron 1 ,41.0223,28.9771,0,KAR
            EMI,Eminönü,41.0170,28.9700,0,
            TAK,Taksim,41.0369,28.9850,0,
            NODE,Somewhere inside,,,3,KAR

            """,
        .routes: "route_type,route_id,route_short_name,route_long_name\n0,T1,T1,Kabataş–Bağcılar\n3,B30, 30D ,\n",
        .trips: "route_id,service_id,trip_id\nT1,WK,T1-a\nT1,WK,T1-b\nB30,WK,B30-a\n",
        .stopTimes: """
            trip_id,arrival_time,departure_time,stop_id,stop_sequence
            T1-a,08:00:00,08:00:00,EMI,1
            T1-a,08:04:00,08:04:00,KAR-1,2
            T1-b,09:00:00,09:00:00,KAR-1,1
            T1-b,09:04:00,09:04:00,EMI,2
            B30-a,10:00:00,10:00:00,TAK,1
            B30-a,10:10:00,10:10:00,KAR,2

            """,
    ]

    func testAFeedIsReadIntoItsNetwork() {
        let (network, reader) = read(Self.good)
        XCTAssertEqual(reader.rejects, [])
        XCTAssertEqual(network.agencies, [TransitAgency(id: "IETT", name: "İETT", timeZone: "Europe/Istanbul", language: "tr")])
        XCTAssertEqual(Set(network.stops.keys), ["KAR", "KAR-1", "EMI", "TAK"], "a generic node has no place of its own")
        XCTAssertEqual(network.stops["KAR-1"], TransitStop(id: "KAR-1", name: "Karaköy peron 1", lat: 41.0223, lon: 28.9771, parent: "KAR"))
        XCTAssertEqual(network.stops["EMI"]?.parent, nil)
        XCTAssertEqual(network.routes["T1"]?.type, 0)
        XCTAssertEqual(network.routes["B30"]?.name, "30D")
        XCTAssertEqual(network.stopsOfRoute, ["T1": ["EMI", "KAR-1"], "B30": ["KAR", "TAK"]])
        XCTAssertEqual(network.route(ofTrip: "T1-b"), "T1")
        XCTAssertEqual(network.route(ofTrip: "B30-a"), "B30")
        XCTAssertNil(network.route(ofTrip: "nope"))
    }

    func testBadRowsAreRefusedWithFileLineAndReasonAndTheRestKept() {
        var files = Self.good
        files[.stops] = """
            stop_id,stop_name,stop_lat,stop_lon
            OK,Fine,41.0,29.0
            BADLAT,Nowhere,91,29.0
            BADLON,Nowhere,41.0,east
            SHORT,Too few
            OK,Again,41.0,29.0
            "QUOTE"X,Broken,41.0,29.0

            """
        files[.routes] = "route_id,route_type\nR1,3\nR2,42\nR3,\nR4,715\n"
        files[.trips] = "route_id,trip_id\nR1,t1\nNOPE,t2\nR4,t4\n"
        files[.stopTimes] = "trip_id,stop_id\nt1,OK\nt2,OK\nt1,GHOST\nt4,OK\n"
        let (network, reader) = read(files)
        XCTAssertEqual(reader.rejects.map(\.description), [
            "stops.txt line 3: stop BADLAT: stop_lat 91 is not a latitude",
            "stops.txt line 4: stop BADLON: stop_lon east is not a longitude",
            "stops.txt line 5: 2 fields where the header has 4",
            "stops.txt line 6: stop_id OK given twice",
            "stops.txt line 7: text after the closing quote of field 1",
            "routes.txt line 3: route R2: route_type 42 is not a GTFS route type",
            "routes.txt line 4: route R3: route_type (none) is not a GTFS route type",
            "trips.txt line 3: trip t2: route_id NOPE is not in routes.txt",
            "stop_times.txt line 3: trip_id t2 is not in trips.txt",
            "stop_times.txt line 4: stop_id GHOST is not in stops.txt",
        ])
        XCTAssertEqual(Set(network.stops.keys), ["OK"])
        XCTAssertEqual(Set(network.routes.keys), ["R1", "R4"], "an extended route type (715, demand and response bus) is a route type")
        XCTAssertEqual(network.stopsOfRoute, ["R1": ["OK"], "R4": ["OK"]])
    }

    func testAFileWithoutARequiredColumnIsRefusedOnce() {
        var files = Self.good
        files[.stops] = "stop_id,stop_name\nA,No place\nB,No place either\n"
        files[.stopTimes] = "trip_id,arrival_time\nT1-a,08:00:00\n"
        let (network, reader) = read(files)
        XCTAssertEqual(reader.rejects.map(\.description), [
            "stops.txt line 2: stop A: stop_lat (none) is not a latitude",
            "stops.txt line 3: stop B: stop_lat (none) is not a latitude",
            "stop_times.txt line 1: no stop_id column",
        ])
        XCTAssertTrue(network.stops.isEmpty)
        XCTAssertEqual(network.stopsOfRoute, [:])
    }

    func testRejectsBeyondTheLimitAreCountedNotKept() {
        var files = Self.good
        files[.stopTimes] = "trip_id,stop_id\n" + String(repeating: "nope,EMI\n", count: 50)
        var limits = GTFSReader.Limits()
        limits.maxRejectsKept = 10
        let (_, reader) = read(files, limits: limits)
        XCTAssertEqual(reader.rejects.count, 10)
        XCTAssertEqual(reader.rejectCount, 50)
        XCTAssertEqual(reader.rejects.last?.line, 11)
    }
}
