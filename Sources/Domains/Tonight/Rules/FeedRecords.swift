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
        var date = date, time = time
        let parsed: LocalDateTime?? = date.withUTF8 { d in
            time.withUTF8 { t in
                guard let y = Self.number(d, 0, 4, "-"), let mo = Self.number(d, 5, 2, "-"), let dd = Self.number(d, 8, 2, nil), d.count == 10,
                      let h = Self.number(t, 0, 2, ":"), let mi = Self.number(t, 3, 2, nil), t.count == 5 else { return nil }
                return LocalDateTime(year: y, month: mo, day: dd, hour: h, minute: mi)
            }
        }
        guard let parsed = parsed ?? nil else { return nil }
        self = parsed
    }

    /// `2026-10-01T10:00` (the feed's `OnSaleDate`; seconds after the minutes are ignored).
    public init?(iso text: String) {
        var text = text
        let parsed: LocalDateTime?? = text.withUTF8 { u in
            guard u.count >= 16, let y = Self.number(u, 0, 4, "-"), let mo = Self.number(u, 5, 2, "-"), let d = Self.number(u, 8, 2, "T"),
                  let h = Self.number(u, 11, 2, ":"), let mi = Self.number(u, 14, 2, nil) else { return nil }
            return LocalDateTime(year: y, month: mo, day: d, hour: h, minute: mi)
        }
        guard let parsed = parsed ?? nil else { return nil }
        self = parsed
    }

    /// The number in `count` digits of `bytes` at `at`, followed by `then` (when given).
    private static func number(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ count: Int, _ then: Unicode.Scalar?) -> Int? {
        guard bytes.count >= at + count + (then == nil ? 0 : 1) else { return nil }
        var n = 0
        for i in at..<(at + count) {
            let b = bytes[i]
            guard b >= 0x30, b <= 0x39 else { return nil }
            n = n * 10 + Int(b - 0x30)
        }
        if let then, bytes[at + count] != UInt8(then.value) { return nil }
        return n
    }

    public static func < (a: LocalDateTime, b: LocalDateTime) -> Bool {
        (a.year, a.month, a.day, a.hour, a.minute) < (b.year, b.month, b.day, b.hour, b.minute)
    }

    /// `2026-11-22T20:00` (written for every event of a feed: by hand, not by interpolation).
    public var description: String {
        String(unsafeUninitializedCapacity: 16) { out in
            func put(_ n: Int, _ width: Int, at: Int) {
                var n = n
                for i in stride(from: at + width - 1, through: at, by: -1) {
                    out[i] = UInt8(0x30 + n % 10)
                    n /= 10
                }
            }
            put(year, 4, at: 0)
            out[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            out[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            out[10] = UInt8(ascii: "T")
            put(hour, 2, at: 11)
            out[13] = UInt8(ascii: ":")
            put(minute, 2, at: 14)
            return 16
        }
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
