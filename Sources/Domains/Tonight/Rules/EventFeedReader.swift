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
        /// Inside a record of the feed (its parts gather in `builder`).
        case record
        /// Inside an element that is not a record, until the element at this depth closes.
        case skipping(untilDepth: Int)
    }

    /// The four kinds of record.
    enum Kind: String {
        case category = "Category", artist = "Artist", venue = "Venue", event = "Event"

        init?(_ name: String) {
            switch name {
            case "Category": self = .category
            case "Artist": self = .artist
            case "Venue": self = .venue
            case "Event": self = .event
            default: return nil
            }
        }
    }

    /// The children a record keeps: text fields and references to other records by `ID`. Each has
    /// a slot in the builder, so reading a record hashes no names.
    enum Part: Int, CaseIterable {
        case categoryName, parentCategory
        case artistName, artistImageURL, artistURL, artistCategory
        case venueName, venueStreet, venueCity, venueState, venueZip, venueImageURL, venueURL, venueLatitude, venueLongitude, venueTimeZone
        case eventDate, eventTime, eventStatus, onSaleDate, performanceName, eventURL, minPrice, maxPrice, currency
        case eventPerformer, eventCategory, eventVenue

        /// Whether it refers to another record (its `ID` is kept) rather than holding text.
        var isReference: Bool { self == .parentCategory || self == .artistCategory || self == .eventPerformer || self == .eventCategory || self == .eventVenue }

        /// The part called `name` in a record of `kind`, if the reader keeps it.
        init?(_ kind: Kind, _ name: String) {
            switch kind {
            case .category:
                switch name {
                case "CategoryName": self = .categoryName
                case "ParentCategory": self = .parentCategory
                default: return nil
                }
            case .artist:
                switch name {
                case "ArtistName": self = .artistName
                case "ArtistCategory": self = .artistCategory
                case "ArtistImageURL": self = .artistImageURL
                case "ArtistURL": self = .artistURL
                default: return nil
                }
            case .venue:
                switch name {
                case "VenueName": self = .venueName
                case "VenueLatitude": self = .venueLatitude
                case "VenueLongitude": self = .venueLongitude
                case "VenueTimeZone": self = .venueTimeZone
                case "VenueStreet": self = .venueStreet
                case "VenueCity": self = .venueCity
                case "VenueState": self = .venueState
                case "VenueZip": self = .venueZip
                case "VenueImageURL": self = .venueImageURL
                case "VenueURL": self = .venueURL
                default: return nil
                }
            case .event:
                switch name {
                case "EventPerformer": self = .eventPerformer
                case "EventVenue": self = .eventVenue
                case "EventCategory": self = .eventCategory
                case "EventDate": self = .eventDate
                case "EventTime": self = .eventTime
                case "EventStatus": self = .eventStatus
                case "MinPrice": self = .minPrice
                case "MaxPrice": self = .maxPrice
                case "Currency": self = .currency
                case "OnSaleDate": self = .onSaleDate
                case "PerformanceName": self = .performanceName
                case "EventURL": self = .eventURL
                default: return nil
                }
            }
        }

        /// The element's name in the feed (for reasons).
        var name: String {
            switch self {
            case .categoryName: "CategoryName"
            case .parentCategory: "ParentCategory"
            case .artistName: "ArtistName"
            case .artistImageURL: "ArtistImageURL"
            case .artistURL: "ArtistURL"
            case .artistCategory: "ArtistCategory"
            case .venueName: "VenueName"
            case .venueStreet: "VenueStreet"
            case .venueCity: "VenueCity"
            case .venueState: "VenueState"
            case .venueZip: "VenueZip"
            case .venueImageURL: "VenueImageURL"
            case .venueURL: "VenueURL"
            case .venueLatitude: "VenueLatitude"
            case .venueLongitude: "VenueLongitude"
            case .venueTimeZone: "VenueTimeZone"
            case .eventDate: "EventDate"
            case .eventTime: "EventTime"
            case .eventStatus: "EventStatus"
            case .onSaleDate: "OnSaleDate"
            case .performanceName: "PerformanceName"
            case .eventURL: "EventURL"
            case .minPrice: "MinPrice"
            case .maxPrice: "MaxPrice"
            case .currency: "Currency"
            case .eventPerformer: "EventPerformer"
            case .eventCategory: "EventCategory"
            case .eventVenue: "EventVenue"
            }
        }
    }

    /// The parts of the record being read (one builder, reused record after record).
    final class RecordBuilder {
        var kind = Kind.category
        var id: String?
        var line = 0
        /// Text of each text part (the first occurrence counts).
        var fields = [String?](repeating: nil, count: Part.allCases.count)
        /// `ID`s of each reference part, in order.
        var references = [[String]](repeating: [], count: Part.allCases.count)
        /// Text of the child being read, its descendants' included.
        var pending = ""
        /// The text part being read, if the record keeps it and has not had it yet.
        var keeping: Part?

        func reset(_ kind: Kind, id: String?, line: Int) {
            self.kind = kind
            self.id = id
            self.line = line
            for i in fields.indices where fields[i] != nil { fields[i] = nil }
            for i in references.indices where !references[i].isEmpty { references[i].removeAll() }
            pending = ""
            keeping = nil
        }

        func field(_ part: Part) -> String? { fields[part.rawValue].flatMap { $0.isEmpty ? nil : $0 } }
        func references(_ part: Part) -> [String] { references[part.rawValue] }
    }

    private var state = State.between
    private var depth = 0
    private let builder = RecordBuilder()
    private let onRecord: (FeedRecord, _ line: Int) -> Void
    private let onReject: (FeedReject) -> Void

    /// `onRecord` gets each record with the line its element starts at.
    public init(onRecord: @escaping (FeedRecord, _ line: Int) -> Void, onReject: @escaping (FeedReject) -> Void) {
        self.onRecord = onRecord
        self.onReject = onReject
    }

    /// Whether the text coming next is read: only inside a field the record keeps.
    public var wantsText: Bool {
        if case .record = state { return builder.keeping != nil }
        return false
    }

    /// An element opened; `id` (its `ID` attribute) is read only for records and references.
    public func start(_ name: String, id: @autoclosure () -> String?, line: Int) {
        depth += 1
        switch state {
        case .between:
            guard depth == 2 else { return } // the root
            if let kind = Kind(name) {
                builder.reset(kind, id: id().map(Self.trimmed).flatMap { $0.isEmpty ? nil : $0 }, line: line)
                state = .record
            } else {
                state = .skipping(untilDepth: depth)
            }
        case .record:
            guard depth == 3 else { return }
            let r = builder
            r.pending = ""
            r.keeping = nil
            guard let part = Part(r.kind, name) else { return }
            if part.isReference {
                if let ref = id().map(Self.trimmed), !ref.isEmpty { r.references[part.rawValue].append(ref) }
            } else if r.fields[part.rawValue] == nil {
                r.keeping = part
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
        case .record:
            let r = builder
            if depth >= 4 {
                if r.keeping != nil { r.pending += text() }
            } else if depth == 3 {
                if let part = r.keeping {
                    r.fields[part.rawValue] = Self.trimmed(r.pending.isEmpty ? text() : r.pending + text())
                    r.keeping = nil
                }
                r.pending = ""
            } else {
                state = .between
                finish(r)
            }
        }
    }

    private func finish(_ r: RecordBuilder) {
        do throws(Refusal) {
            guard let id = r.id else { throw Refusal("no ID") }
            onRecord(try Self.record(r, id: id), r.line)
        } catch {
            onReject(FeedReject(record: "\(r.kind.rawValue) \(r.id ?? "(no ID)")", line: r.line, reason: error.reason))
        }
    }

    struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func record(_ r: RecordBuilder, id: String) throws(Refusal) -> FeedRecord {
        func required(_ part: Part) throws(Refusal) -> String {
            guard let v = r.field(part) else { throw Refusal("no \(part.name)") }
            return v
        }
        switch r.kind {
        case .category:
            return .category(FeedCategory(id: id, name: try required(.categoryName), parent: r.references(.parentCategory).first))
        case .artist:
            return .artist(FeedArtist(id: id, name: try required(.artistName), categories: r.references(.artistCategory),
                                      imageURL: r.field(.artistImageURL), url: r.field(.artistURL)))
        case .venue:
            let lat = try coordinate(r.field(.venueLatitude), "VenueLatitude", limit: 90)
            let lon = try coordinate(r.field(.venueLongitude), "VenueLongitude", limit: 180)
            return .venue(FeedVenue(id: id, name: try required(.venueName), street: r.field(.venueStreet), city: r.field(.venueCity),
                                    state: r.field(.venueState), zip: r.field(.venueZip), imageURL: r.field(.venueImageURL),
                                    url: r.field(.venueURL), latitude: lon == nil ? nil : lat, longitude: lat == nil ? nil : lon,
                                    timeZone: r.field(.venueTimeZone)))
        case .event:
            guard let venue = r.references(.eventVenue).first else { throw Refusal("no EventVenue") }
            let performers = r.references(.eventPerformer)
            guard !performers.isEmpty else { throw Refusal("no EventPerformer") }
            let date = try required(.eventDate), time = try required(.eventTime)
            guard let start = LocalDateTime(date: date, time: time) else {
                // Which of the two is wrong, for the reason.
                if LocalDateTime(date: date, time: "00:00") == nil { throw Refusal("EventDate \(date) is not a date (YYYY-MM-DD)") }
                throw Refusal("EventTime \(time) is not a time (HH:MM)")
            }
            let statusText = try required(.eventStatus)
            guard let status = EventStatus(rawValue: statusText) else {
                throw Refusal("EventStatus \(statusText) is not one of \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var onSale: LocalDateTime?
            if let text = r.field(.onSaleDate) {
                guard let t = LocalDateTime(iso: text) else { throw Refusal("OnSaleDate \(text) is not a time (YYYY-MM-DDTHH:MM)") }
                onSale = t
            }
            let minPrice = try price(r.field(.minPrice), "MinPrice"), maxPrice = try price(r.field(.maxPrice), "MaxPrice")
            if let minPrice, let maxPrice, minPrice > maxPrice { throw Refusal("MinPrice is above MaxPrice") }
            var currency: String?
            if let c = r.field(.currency) {
                guard c.utf8.count == 3, c.utf8.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A }) else {
                    throw Refusal("Currency \(c) is not a currency code")
                }
                currency = c.uppercased()
            }
            return .event(FeedEvent(id: id, performers: performers, categories: r.references(.eventCategory), venue: venue,
                                    start: start, status: status, onSale: onSale, name: r.field(.performanceName), url: r.field(.eventURL),
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

