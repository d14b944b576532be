/// Turns the elements of the event-info feed (feeds.md), as a streamed XML parser reports them,
/// into checked records: each `Category`, `Artist`, `Venue` and `Event` under the root becomes one
/// `FeedRecord`, or one `FeedReject` naming the record, its line and the reason. Unknown elements
/// (and everything inside them) are skipped; text may sit in CDATA or in nested markup
/// (`<ArtistURL><i>…</i></ArtistURL>`). Holds only the record being read, whatever the feed's size.
///
/// References between records (an event's venue and performers) are resolved by the ingest once
/// the whole feed is read: records come in any order.
public final class EventFeedReader {
    /// Where the reader is in the document.
    private enum State {
        /// Outside the root, or directly inside it between records.
        case between
        /// Inside a record of the feed.
        case record(RecordBuilder)
        /// Inside an element that is not a record, until the element at this depth closes.
        case skipping(untilDepth: Int)
    }

    /// The parts of one record gathered so far.
    final class RecordBuilder {
        let kind: String
        let id: String?
        let line: Int
        /// Text of each child element (the first occurrence counts).
        var fields: [String: String] = [:]
        /// `ID`s of the children that refer to other records (`EventPerformer ID`...), in order.
        var references: [String: [String]] = [:]
        /// Text of the child being read, its descendants' included.
        var pending = ""
        /// Whether the child being read is a field this kind of record keeps.
        var keeping = false
        let wanted: Set<String>

        init(kind: String, id: String?, line: Int) {
            self.kind = kind
            self.id = id
            self.line = line
            wanted = EventFeedReader.fieldNames[kind] ?? []
        }
    }

    public static let recordKinds: Set<String> = ["Category", "Artist", "Venue", "Event"]

    /// The text fields each kind of record reads; others (descriptions, notes) are not kept.
    static let fieldNames: [String: Set<String>] = [
        "Category": ["CategoryName"],
        "Artist": ["ArtistName", "ArtistImageURL", "ArtistURL"],
        "Venue": ["VenueName", "VenueStreet", "VenueCity", "VenueState", "VenueZip", "VenueImageURL", "VenueURL",
                  "VenueLatitude", "VenueLongitude", "VenueTimeZone"],
        "Event": ["EventDate", "EventTime", "EventStatus", "OnSaleDate", "PerformanceName", "EventURL", "MinPrice", "MaxPrice", "Currency"],
    ]

    private var state = State.between
    private var depth = 0
    private let onRecord: (FeedRecord, _ line: Int) -> Void
    private let onReject: (FeedReject) -> Void

    /// `onRecord` gets each record with the line its element starts at.
    public init(onRecord: @escaping (FeedRecord, _ line: Int) -> Void, onReject: @escaping (FeedReject) -> Void) {
        self.onRecord = onRecord
        self.onReject = onReject
    }

    public func start(_ name: String, attributes: [String: String], line: Int) {
        depth += 1
        switch state {
        case .between:
            guard depth == 2 else { return } // the root
            if Self.recordKinds.contains(name) {
                let id = attributes["ID"].map(Self.trimmed).flatMap { $0.isEmpty ? nil : $0 }
                state = .record(RecordBuilder(kind: name, id: id, line: line))
            } else {
                state = .skipping(untilDepth: depth)
            }
        case .record(let r):
            if depth == 3 {
                r.pending = ""
                r.keeping = r.wanted.contains(name) && r.fields[name] == nil
                if let id = attributes["ID"].map(Self.trimmed), !id.isEmpty { r.references[name, default: []].append(id) }
            }
        case .skipping:
            break
        }
    }

    /// `text` is read only for a field the record keeps (the parser's `XMLText.string`, passed as a closure
    /// so this target needs no parser).
    public func end(_ name: String, text: () -> String) {
        defer { depth -= 1 }
        switch state {
        case .between:
            break
        case .skipping(let until):
            if depth == until { state = .between }
        case .record(let r):
            if depth >= 4 {
                if r.keeping { r.pending += text() }
            } else if depth == 3 {
                if r.keeping {
                    r.fields[name] = Self.trimmed(r.pending.isEmpty ? text() : r.pending + text())
                    r.keeping = false
                }
                r.pending = ""
            } else {
                state = .between
                finish(r)
            }
        }
    }

    private func finish(_ r: RecordBuilder) {
        let label = "\(r.kind) \(r.id ?? "(no ID)")"
        do throws(Refusal) {
            guard let id = r.id else { throw Refusal("no ID") }
            onRecord(try Self.record(r, id: id), r.line)
        } catch {
            onReject(FeedReject(record: label, line: r.line, reason: error.reason))
        }
    }

    struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func record(_ r: RecordBuilder, id: String) throws(Refusal) -> FeedRecord {
        func field(_ name: String) -> String? { r.fields[name].flatMap { $0.isEmpty ? nil : $0 } }
        func required(_ name: String) throws(Refusal) -> String {
            guard let v = field(name) else { throw Refusal("no \(name)") }
            return v
        }
        switch r.kind {
        case "Category":
            return .category(FeedCategory(id: id, name: try required("CategoryName"), parent: r.references["ParentCategory"]?.first))
        case "Artist":
            return .artist(FeedArtist(id: id, name: try required("ArtistName"), categories: r.references["ArtistCategory"] ?? [],
                                      imageURL: field("ArtistImageURL"), url: field("ArtistURL")))
        case "Venue":
            let lat = try coordinate(field("VenueLatitude"), "VenueLatitude", limit: 90)
            let lon = try coordinate(field("VenueLongitude"), "VenueLongitude", limit: 180)
            return .venue(FeedVenue(id: id, name: try required("VenueName"), street: field("VenueStreet"), city: field("VenueCity"),
                                    state: field("VenueState"), zip: field("VenueZip"), imageURL: field("VenueImageURL"),
                                    url: field("VenueURL"), latitude: lon == nil ? nil : lat, longitude: lat == nil ? nil : lon,
                                    timeZone: field("VenueTimeZone")))
        default:
            guard let venue = r.references["EventVenue"]?.first else { throw Refusal("no EventVenue") }
            guard let performers = r.references["EventPerformer"], !performers.isEmpty else { throw Refusal("no EventPerformer") }
            let date = try required("EventDate"), time = try required("EventTime")
            guard let start = LocalDateTime(date: date, time: time) else {
                // Which of the two is wrong, for the reason.
                if LocalDateTime(date: date, time: "00:00") == nil { throw Refusal("EventDate \(date) is not a date (YYYY-MM-DD)") }
                throw Refusal("EventTime \(time) is not a time (HH:MM)")
            }
            let statusText = try required("EventStatus")
            guard let status = EventStatus(rawValue: statusText) else {
                throw Refusal("EventStatus \(statusText) is not one of \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var onSale: LocalDateTime?
            if let text = field("OnSaleDate") {
                guard let t = LocalDateTime(iso: text) else { throw Refusal("OnSaleDate \(text) is not a time (YYYY-MM-DDTHH:MM)") }
                onSale = t
            }
            let minPrice = try price(field("MinPrice"), "MinPrice"), maxPrice = try price(field("MaxPrice"), "MaxPrice")
            if let minPrice, let maxPrice, minPrice > maxPrice { throw Refusal("MinPrice is above MaxPrice") }
            var currency: String?
            if let c = field("Currency") {
                guard c.count == 3, c.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw Refusal("Currency \(c) is not a currency code") }
                currency = c.uppercased()
            }
            return .event(FeedEvent(id: id, performers: performers, categories: r.references["EventCategory"] ?? [], venue: venue,
                                    start: start, status: status, onSale: onSale, name: field("PerformanceName"), url: field("EventURL"),
                                    minPrice: minPrice, maxPrice: maxPrice, currency: currency))
        }
    }

    /// A price in minor units: digits, optionally a point and one or two more digits; not negative.
    static func price(_ text: String?, _ name: String) throws(Refusal) -> Int? {
        guard let text else { return nil }
        var whole = 0, wholeDigits = 0, cents = 0, centDigits = 0, afterPoint = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "."), !afterPoint {
                afterPoint = true
            } else if byte >= 0x30, byte <= 0x39 {
                if afterPoint {
                    cents = cents * 10 + Int(byte - 0x30)
                    centDigits += 1
                } else {
                    whole = whole * 10 + Int(byte - 0x30)
                    wholeDigits += 1
                }
            } else {
                throw Refusal("\(name) \(text) is not a price")
            }
        }
        guard (1...9).contains(wholeDigits), afterPoint ? (1...2).contains(centDigits) : true else {
            throw Refusal("\(name) \(text) is not a price")
        }
        return whole * 100 + (centDigits == 1 ? cents * 10 : cents)
    }

    static func coordinate(_ text: String?, _ name: String, limit: Double) throws(Refusal) -> Double? {
        guard let text else { return nil }
        guard let v = Double(text), v.isFinite, abs(v) <= limit else { throw Refusal("\(name) \(text) is not a coordinate") }
        return v
    }

    /// Without the spaces, tabs and line ends around it (the feed's layout, never content).
    static func trimmed(_ s: String) -> String {
        let utf8 = s.utf8
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        guard let first = utf8.first, let last = utf8.last, isSpace(first) || isSpace(last) else { return s }
        var start = utf8.startIndex, end = utf8.endIndex
        while start < end, isSpace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isSpace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return String(s[start..<end])
    }
}

