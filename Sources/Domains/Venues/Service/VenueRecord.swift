import Realtime
import Storage
import Venues

/// A venue's profile as stored and as sent to clients.
public struct VenueRecord: Sendable, Equatable {
    public var id: String
    public var ownerID: String
    public var name: String
    public var address: String
    public var postcode: String
    public var city: String
    public var country: String
    public var lat: Double
    public var lon: Double

    public var json: JSON {
        ["id": .string(id), "owner": .string(ownerID), "name": .string(name), "address": .string(address),
         "postcode": .string(postcode), "city": .string(city), "country": .string(country),
         "lat": .double(lat), "lon": .double(lon)]
    }

    init(row: SQLRow) {
        id = row["id"]
        ownerID = row["owner_id"]
        name = row["name"]
        address = row["address"]
        postcode = row["postcode"]
        city = row["city"]
        country = row["country"]
        lat = row["lat"]
        lon = row["lon"]
    }

    init(id: String, ownerID: String, fields: VenueFields) {
        self.id = id
        self.ownerID = ownerID
        name = fields.name
        address = fields.address
        postcode = fields.postcode
        city = fields.city
        country = fields.country
        lat = fields.lat
        lon = fields.lon
    }

    /// A venue with every field filled, to check the fields of an edit before the stored ones are read.
    static let placeholder = VenueRecord(id: "", ownerID: "", name: "-", address: "-", postcode: "-", city: "-", country: "-", lat: 0, lon: 0)

    private init(id: String, ownerID: String, name: String, address: String, postcode: String, city: String, country: String,
                 lat: Double, lon: Double) {
        self.id = id
        self.ownerID = ownerID
        self.name = name
        self.address = address
        self.postcode = postcode
        self.city = city
        self.country = country
        self.lat = lat
        self.lon = lon
    }

    /// The text venue search matches against (UC6: name or address).
    var searchText: String { VenueText.normalized("\(name) \(address) \(postcode) \(city)") }
}

/// The fields of venue.register and venue.update, validated: all required, none blank (UC16 6a, UC17 8a).
public struct VenueFields: Sendable, Equatable {
    public var name, address, postcode, city, country: String
    public var lat, lon: Double

    /// Reads every field; with `base`, fields not given keep the base's values.
    public init(_ args: Args, base: VenueRecord? = nil) throws(ProtocolError) {
        func text(_ key: String, _ current: String?) throws(ProtocolError) -> String {
            guard let v = try args.optionalString(key, maxLength: 200) ?? current else { throw .badRequest("missing field \(key): all fields have to be filled in") }
            let trimmed = v.trimmingSpacesAndNewlines
            guard !trimmed.isEmpty else { throw .badRequest("field \(key) is empty: all fields have to be filled in") }
            return trimmed
        }
        name = try text("name", base?.name)
        address = try text("address", base?.address)
        postcode = try text("postcode", base?.postcode)
        city = try text("city", base?.city)
        country = try text("country", base?.country)
        guard let la = try args.optionalDouble("lat") ?? base?.lat else { throw .badRequest("missing field lat") }
        guard let lo = try args.optionalDouble("lon") ?? base?.lon else { throw .badRequest("missing field lon") }
        guard (-90...90).contains(la) else { throw .badRequest("field lat must be between -90 and 90") }
        guard (-180...180).contains(lo) else { throw .badRequest("field lon must be between -180 and 180") }
        lat = la
        lon = lo
    }
}

extension String {
    var trimmingSpacesAndNewlines: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
