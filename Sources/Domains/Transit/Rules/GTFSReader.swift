/// The GTFS files Hubbub reads, in the order it reads them: trips need routes, stop times need
/// trips and stops.
public enum GTFSFile: String, CaseIterable, Sendable {
    case agency = "agency.txt"
    case stops = "stops.txt"
    case routes = "routes.txt"
    case trips = "trips.txt"
    case stopTimes = "stop_times.txt"
}

/// A row refused, with where it was and why.
public struct GTFSReject: Sendable, Equatable, CustomStringConvertible {
    public var file: GTFSFile
    public var line: Int
    public var reason: String

    public init(file: GTFSFile, line: Int, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { "\(file.rawValue) line \(line): \(reason)" }
}

/// An operator (`agency.txt`).
public struct TransitAgency: Sendable, Equatable {
    public var id: String
    public var name: String
    /// IANA time zone name.
    public var timeZone: String
    /// BCP 47 language of its texts, if given.
    public var language: String?

    public init(id: String, name: String, timeZone: String, language: String?) {
        self.id = id
        self.name = name
        self.timeZone = timeZone
        self.language = language
    }
}

/// A stop, station or entrance (`stops.txt`).
public struct TransitStop: Sendable, Equatable {
    public var id: String
    public var name: String
    public var lat: Double
    public var lon: Double
    /// The station it belongs to, if any.
    public var parent: String?

    public init(id: String, name: String, lat: Double, lon: Double, parent: String?) {
        self.id = id
        self.name = name
        self.lat = lat
        self.lon = lon
        self.parent = parent
    }
}

/// A route (`routes.txt`).
public struct TransitRoute: Sendable, Equatable {
    public var id: String
    public var shortName: String?
    public var longName: String?
    /// GTFS `route_type`: 0 tram, 1 subway, 2 rail, 3 bus, 4 ferry, 5 cable tram, 6 aerial lift,
    /// 7 funicular, 11 trolleybus, 12 monorail, or an extended type (100–1799).
    public var type: Int
    public var agency: String?

    public init(id: String, shortName: String?, longName: String?, type: Int, agency: String?) {
        self.id = id
        self.shortName = shortName
        self.longName = longName
        self.type = type
        self.agency = agency
    }

    /// The route's name as riders see it ("5", "Night bus N1").
    public var name: String { [shortName, longName].compactMap { $0 }.first ?? id }

    /// What riders call a vehicle of `type` (a tag of the alerts about it): tram, subway, rail,
    /// bus, ferry, cable-tram, aerial-lift, funicular, trolleybus, monorail; extended types by
    /// their family (coaches are buses, water transport ferries).
    public static func typeName(_ type: Int) -> String? {
        switch type {
        case 0, 900...999: "tram"
        case 1, 400...499: "subway"
        case 2, 100...199, 300...399: "rail"
        case 3, 200...299, 700...799: "bus"
        case 4, 1000...1299: "ferry"
        case 5: "cable-tram"
        case 6, 1300...1399: "aerial-lift"
        case 7, 1400...1499: "funicular"
        case 11, 800...899: "trolleybus"
        case 12: "monorail"
        default: nil
        }
    }

    /// Whether `type` is one GTFS defines (basic or extended).
    static func isKnownType(_ t: Int) -> Bool { (0...7).contains(t) || t == 11 || t == 12 || (100...1799).contains(t) }
}

/// A city's network as its GTFS feed describes it: operators, stops, routes and the stops each
/// route serves.
public struct TransitNetwork: Sendable, Equatable {
    public var agencies: [TransitAgency] = []
    public var stops: [String: TransitStop] = [:]
    public var routes: [String: TransitRoute] = [:]
    /// Each route's stops (by id, sorted), from its trips' stop times.
    public var stopsOfRoute: [String: [String]] = [:]
    /// Each trip's route, by its number in `routeIDs` (an alert may name a trip alone); the reader
    /// numbers routes as it meets them.
    var tripRoutes: [String: Int32] = [:]
    var routeIDs: [String] = []

    public init() {}

    /// The route a trip runs on.
    public func route(ofTrip trip: String) -> String? { tripRoutes[trip].map { routeIDs[Int($0)] } }

    /// Notes that `trip` runs on `route` (a network built by hand).
    public mutating func setRoute(_ route: String, ofTrip trip: String) {
        if let i = routeIDs.firstIndex(of: route) { tripRoutes[trip] = Int32(i); return }
        routeIDs.append(route)
        tripRoutes[trip] = Int32(routeIDs.count - 1)
    }

    /// A network as stored: its parts, and each trip's route.
    public init(agencies: [TransitAgency], stops: [String: TransitStop], routes: [String: TransitRoute], stopsOfRoute: [String: [String]],
                tripRoutes trips: some Sequence<(trip: String, route: String)>) {
        self.agencies = agencies
        self.stops = stops
        self.routes = routes
        self.stopsOfRoute = stopsOfRoute
        var numbers: [String: Int32] = [:]
        for (trip, route) in trips {
            if let number = numbers[route] {
                tripRoutes[trip] = number
            } else {
                routeIDs.append(route)
                numbers[route] = Int32(routeIDs.count - 1)
                tripRoutes[trip] = Int32(routeIDs.count - 1)
            }
        }
    }

    /// Trips with their routes (to store them).
    public var trips: some Sequence<(trip: String, route: String)> { tripRoutes.lazy.map { ($0.key, routeIDs[Int($0.value)]) } }
    public var tripCount: Int { tripRoutes.count }
}

/// Reads a GTFS feed's files, one record at a time (`CSVReader`'s), into a `TransitNetwork`: each
/// file's first record is its header, so columns are found by name, in any order, extra ones
/// ignored. A bad row is refused with its file, line and reason, and the rest is kept. Holds what
/// the network needs and, while stop times are read, each trip's route (by number, not by id):
/// a city's 5 million stop times pass through without being kept.
public struct GTFSReader: Sendable {
    /// Limits on what a feed may hold.
    public struct Limits: Sendable, Equatable {
        public var maxStops = 1_000_000
        public var maxRoutes = 100_000
        public var maxTrips = 5_000_000
        /// Rejects kept with their reasons; beyond, only counted.
        public var maxRejectsKept = 1_000
        public init() {}
    }

    /// A file's columns by name.
    private struct Header {
        var index: [String: Int] = [:]
        var count = 0
        /// Every column the file needs is there (else the header was rejected and so is the file).
        var complete = false
        init() {}
        init(_ record: CSVRecord, file: GTFSFile) {
            count = record.count
            for (i, name) in record.fields.enumerated() where index[name.trimmed] == nil { index[name.trimmed] = i }
            complete = GTFSReader.required(file).allSatisfy { index[$0] != nil }
        }
        func callAsFunction(_ name: String) -> Int? { index[name] }
    }

    public let limits: Limits
    public private(set) var network = TransitNetwork()
    public private(set) var rejects: [GTFSReject] = []
    /// Every reject, kept or not.
    public private(set) var rejectCount = 0
    private var file: GTFSFile?
    private var header: Header?
    private var routeNumbers: [String: Int32] = [:]
    /// Stops by id, as their number in `stopIDs`.
    private var stopNumbers: [String: Int32] = [:]
    private var stopIDs: [String] = []
    /// Each route's stops (numbers), by route number.
    private var servedStops: [Set<Int32>] = []
    /// The trip of the last stop time read, and its route's number.
    private var lastTrip: (id: [UInt8], route: Int32)?

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// The records that follow are `file`'s (its header first).
    public mutating func begin(_ file: GTFSFile) {
        self.file = file
        header = nil
    }

    /// A refusal of the CSV reader in the current file.
    public mutating func refused(line: Int, reason: String) {
        if let file { reject(file, line, reason) }
    }

    /// One record of the current file.
    public mutating func take(_ record: CSVRecord) {
        guard let file else { return }
        guard let header else {
            header = Header(record, file: file)
            if let missing = Self.required(file).first(where: { header!($0) == nil }) {
                reject(file, record.line, "no \(missing) column")
            }
            return
        }
        guard header.complete else { return } // the header said why
        guard record.count == header.count else {
            return reject(file, record.line, "\(record.count) fields where the header has \(header.count)")
        }
        if file == .stopTimes {
            // Millions of rows: read by column number, without making a string of every field.
            do throws(Refusal) {
                try stopTime(record, trip: header("trip_id")!, stop: header("stop_id")!)
            } catch {
                reject(file, record.line, error.reason)
            }
            return
        }
        func field(_ name: String) -> String? {
            header(name).flatMap { record[$0]?.trimmed }.flatMap { $0.isEmpty ? nil : $0 }
        }
        do throws(Refusal) {
            switch file {
            case .agency: try agency(field)
            case .stops: try stop(field)
            case .routes: try route(field)
            case .trips: try trip(field)
            case .stopTimes: break // above
            }
        } catch {
            reject(file, record.line, error.reason)
        }
    }

    /// The network read (stop lists sorted), and the rejects.
    public func finished() -> TransitNetwork {
        var out = network
        for (i, stops) in servedStops.enumerated() where !stops.isEmpty { out.stopsOfRoute[network.routeIDs[i]] = stops.map { stopIDs[Int($0)] }.sorted() }
        return out
    }

    struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    fileprivate static func required(_ file: GTFSFile) -> [String] {
        switch file {
        case .agency: ["agency_name", "agency_timezone"]
        case .stops: ["stop_id"]
        case .routes: ["route_id", "route_type"]
        case .trips: ["route_id", "trip_id"]
        case .stopTimes: ["trip_id", "stop_id"]
        }
    }

    private mutating func agency(_ field: (String) -> String?) throws(Refusal) {
        guard let name = field("agency_name") else { throw Refusal("no agency_name") }
        guard let zone = field("agency_timezone") else { throw Refusal("no agency_timezone") }
        network.agencies.append(TransitAgency(id: field("agency_id") ?? "", name: name, timeZone: zone, language: field("agency_lang")))
    }

    private mutating func stop(_ field: (String) -> String?) throws(Refusal) {
        guard let id = field("stop_id") else { throw Refusal("no stop_id") }
        guard network.stops[id] == nil else { throw Refusal("stop_id \(id) given twice") }
        // Generic nodes (3) and boarding areas (4) have no place of their own: not needed.
        let locationType = field("location_type").flatMap { Int($0) } ?? 0
        guard locationType <= 2 else { return }
        guard let latText = field("stop_lat"), let lat = Double(latText), lat.isFinite, abs(lat) <= 90 else {
            throw Refusal("stop \(id): stop_lat \(field("stop_lat") ?? "(none)") is not a latitude")
        }
        guard let lonText = field("stop_lon"), let lon = Double(lonText), lon.isFinite, abs(lon) <= 180 else {
            throw Refusal("stop \(id): stop_lon \(field("stop_lon") ?? "(none)") is not a longitude")
        }
        guard network.stops.count < limits.maxStops else { throw Refusal("more than \(limits.maxStops) stops") }
        network.stops[id] = TransitStop(id: id, name: field("stop_name") ?? id, lat: lat, lon: lon, parent: field("parent_station"))
        stopNumbers[id] = Int32(stopIDs.count)
        stopIDs.append(id)
    }

    private mutating func route(_ field: (String) -> String?) throws(Refusal) {
        guard let id = field("route_id") else { throw Refusal("no route_id") }
        guard network.routes[id] == nil else { throw Refusal("route_id \(id) given twice") }
        guard let typeText = field("route_type"), let type = Int(typeText), TransitRoute.isKnownType(type) else {
            throw Refusal("route \(id): route_type \(field("route_type") ?? "(none)") is not a GTFS route type")
        }
        guard network.routes.count < limits.maxRoutes else { throw Refusal("more than \(limits.maxRoutes) routes") }
        network.routes[id] = TransitRoute(id: id, shortName: field("route_short_name"), longName: field("route_long_name"), type: type,
                                          agency: field("agency_id"))
        routeNumbers[id] = Int32(network.routeIDs.count)
        network.routeIDs.append(id)
        servedStops.append([])
    }

    private mutating func trip(_ field: (String) -> String?) throws(Refusal) {
        guard let id = field("trip_id") else { throw Refusal("no trip_id") }
        guard let route = field("route_id") else { throw Refusal("trip \(id): no route_id") }
        guard let number = routeNumbers[route] else { throw Refusal("trip \(id): route_id \(route) is not in routes.txt") }
        guard network.tripRoutes.count < limits.maxTrips else { throw Refusal("more than \(limits.maxTrips) trips") }
        network.tripRoutes[id] = number
    }

    /// A stop time: its trip's route serves its stop. Rows come grouped by trip, so the trip's
    /// route is looked up once per trip, not once per row.
    private mutating func stopTime(_ record: CSVRecord, trip tripColumn: Int, stop stopColumn: Int) throws(Refusal) {
        let trip = Self.trimmed(record.bytes(tripColumn))
        guard !trip.isEmpty else { throw Refusal("no trip_id") }
        let route: Int32
        if let last = lastTrip, last.route >= 0, last.id.elementsEqual(trip) {
            route = last.route
        } else {
            let id = String(decoding: trip, as: UTF8.self)
            guard let found = network.tripRoutes[id] else { throw Refusal("trip_id \(id) is not in trips.txt") }
            lastTrip = (Array(trip), found)
            route = found
        }
        let stop = Self.trimmed(record.bytes(stopColumn))
        guard !stop.isEmpty else { throw Refusal("trip \(String(decoding: trip, as: UTF8.self)): no stop_id") }
        let stopID = String(decoding: stop, as: UTF8.self)
        guard let number = stopNumbers[stopID] else { throw Refusal("stop_id \(stopID) is not in stops.txt") }
        servedStops[Int(route)].insert(number)
    }

    /// A field's bytes without the spaces and tabs around them.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var b = bytes
        while let first = b.first, first == 0x20 || first == 0x09 { b.removeFirst() }
        while let last = b.last, last == 0x20 || last == 0x09 { b.removeLast() }
        return b
    }

    private mutating func reject(_ file: GTFSFile, _ line: Int, _ reason: String) {
        rejectCount += 1
        if rejects.count < limits.maxRejectsKept { rejects.append(GTFSReject(file: file, line: line, reason: reason)) }
    }
}

extension String {
    /// Without the spaces around it (GTFS producers pad columns).
    fileprivate var trimmed: String {
        let utf8 = self.utf8
        guard let first = utf8.first, let last = utf8.last, first == 0x20 || last == 0x20 || first == 0x09 || last == 0x09 else { return self }
        return String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
