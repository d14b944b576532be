/// The records of the event-info feed (feeds.md): categories, artists, venues and events, as read
/// and checked one at a time. Pure values; the ingest resolves references between them.

/// A category of events and artists (`<Category ID>`; seed 002's games are categories too).
public struct FeedCategory: Sendable, Equatable {
    public var id: String
    public var name: String
    public var parent: String?

    public init(id: String, name: String, parent: String? = nil) {
        self.id = id
        self.name = name
        self.parent = parent
    }
}

/// A performer (`<Artist ID>`).
public struct FeedArtist: Sendable, Equatable {
    public var id: String
    public var name: String
    public var categories: [String]
    public var imageURL: String?
    public var url: String?

    public init(id: String, name: String, categories: [String] = [], imageURL: String? = nil, url: String? = nil) {
        self.id = id
        self.name = name
        self.categories = categories
        self.imageURL = imageURL
        self.url = url
    }
}

/// A place events happen (`<Venue ID>`).
public struct FeedVenue: Sendable, Equatable {
    public var id: String
    public var name: String
    public var street: String?
    public var city: String?
    public var state: String?
    public var zip: String?
    public var imageURL: String?
    public var url: String?
    /// Degrees; nil when the feed gives none (the venue then matches no radius).
    public var latitude: Double?
    public var longitude: Double?
    /// An IANA zone name as given (checked by the ingest); nil: `tonight.defaultTimeZone`.
    public var timeZone: String?

    public init(id: String, name: String, street: String? = nil, city: String? = nil, state: String? = nil, zip: String? = nil,
                imageURL: String? = nil, url: String? = nil, latitude: Double? = nil, longitude: Double? = nil, timeZone: String? = nil) {
        self.id = id
        self.name = name
        self.street = street
        self.city = city
        self.state = state
        self.zip = zip
        self.imageURL = imageURL
        self.url = url
        self.latitude = latitude
        self.longitude = longitude
        self.timeZone = timeZone
    }
}

/// Where an event's sale stands (`<EventStatus>`).
public enum EventStatus: String, Sendable, CaseIterable {
    case onsale, offsale, soldout, cancelled, postponed, rescheduled
}

/// A wall-clock date and time in some place's zone (the feed gives events in venue-local time).
public struct LocalDateTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int

    public init?(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0) {
        guard (1970...9999).contains(year), (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute),
              (1...Self.days(inMonth: month, year: year)).contains(day) else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute) = (year, month, day, hour, minute)
    }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// `2026-11-22` and `20:00` (the feed's `EventDate` and `EventTime`).
    public init?(date: String, time: String) {
        guard let d = Self.digits(date.utf8, "####-##-##"), let t = Self.digits(time.utf8, "##:##") else { return nil }
        self.init(year: d[0], month: d[1], day: d[2], hour: t[0], minute: t[1])
    }

    /// `2026-10-01T10:00` (the feed's `OnSaleDate`; seconds after the minutes are ignored).
    public init?(iso text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 16, let v = Self.digits(utf8[..<16], "####-##-##T##:##") else { return nil }
        self.init(year: v[0], month: v[1], day: v[2], hour: v[3], minute: v[4])
    }

    /// The numbers of `text` when it has exactly the shape of `pattern` (`#` a digit, anything
    /// else itself), one number per run of `#`.
    static func digits(_ text: some Collection<UInt8>, _ pattern: StaticString) -> [Int]? {
        guard text.count == pattern.utf8CodeUnitCount else { return nil }
        var out: [Int] = []
        var current = -1
        var i = 0
        for byte in text {
            let p = pattern.utf8Start[i]
            i += 1
            if p == UInt8(ascii: "#") {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                current = (current < 0 ? 0 : current * 10) + Int(byte - 0x30)
            } else {
                guard byte == p else { return nil }
                if current >= 0 { out.append(current); current = -1 }
            }
        }
        if current >= 0 { out.append(current) }
        return out
    }

    public static func < (a: LocalDateTime, b: LocalDateTime) -> Bool {
        (a.year, a.month, a.day, a.hour, a.minute) < (b.year, b.month, b.day, b.hour, b.minute)
    }

    public var description: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute))"
    }
}

/// A ticketed event (`<Event ID>`).
public struct FeedEvent: Sendable, Equatable {
    public var id: String
    public var performers: [String]
    public var categories: [String]
    public var venue: String
    /// Venue-local start.
    public var start: LocalDateTime
    public var status: EventStatus
    public var onSale: LocalDateTime?
    public var name: String?
    public var url: String?
    /// Prices in minor units (cents); nil when not given.
    public var minPrice: Int?
    public var maxPrice: Int?
    public var currency: String?

    public init(id: String, performers: [String], categories: [String] = [], venue: String, start: LocalDateTime, status: EventStatus,
                onSale: LocalDateTime? = nil, name: String? = nil, url: String? = nil, minPrice: Int? = nil, maxPrice: Int? = nil,
                currency: String? = nil) {
        self.id = id
        self.performers = performers
        self.categories = categories
        self.venue = venue
        self.start = start
        self.status = status
        self.onSale = onSale
        self.name = name
        self.url = url
        self.minPrice = minPrice
        self.maxPrice = maxPrice
        self.currency = currency
    }
}

/// One record of the feed.
public enum FeedRecord: Sendable, Equatable {
    case category(FeedCategory)
    case artist(FeedArtist)
    case venue(FeedVenue)
    case event(FeedEvent)

    public var id: String {
        switch self {
        case .category(let c): c.id
        case .artist(let a): a.id
        case .venue(let v): v.id
        case .event(let e): e.id
        }
    }
}

/// A record refused, with where it was and why (feeds.md `rejects`).
public struct FeedReject: Sendable, Equatable {
    /// `Event 0B004F1A9C2E3D11`, `Venue (no ID)`.
    public var record: String
    public var line: Int
    public var reason: String

    public init(record: String, line: Int, reason: String) {
        self.record = record
        self.line = line
        self.reason = reason
    }
}
