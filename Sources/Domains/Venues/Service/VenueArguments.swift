import DomainSeam
import Realtime
import Venues

/// The arguments of the venue ops, parsed before any handler runs; every failure names the field.

/// Arguments naming the venue an op acts on.
protocol VenueScoped: OpArguments {
    var venue: String { get }
}

/// `{venue}`
struct VenueArgs: VenueScoped {
    var venue: String
    init(_ a: Args) throws(ProtocolError) { venue = try a.string("venue", maxLength: 64) }
}

/// `{venue, track: uri}`
struct VenueTrackArgs: VenueScoped {
    var venue: String
    var track: String
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        track = try a.string("track", maxLength: 500)
    }
}

/// `{venue, track?: uri}` (venue.nowPlaying: null or absent means nothing plays)
struct NowPlayingArgs: VenueScoped {
    var venue: String
    var track: String?
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        track = try a.optionalString("track", maxLength: 500)
    }
}

/// `{venue, track: Track}`
struct RequestArgs: VenueScoped {
    var venue: String
    var track: Track
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        track = try Track(args: try a.object("track"), field: "track")
    }
}

/// `{venue, playlistUri, creator, tracks: [Track]}`
struct SetPlaylistArgs: VenueScoped {
    var venue: String
    var uri: String
    var creator: String
    var tracks: [Track]
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        let items = try a.array("tracks", maxCount: 5000)
        tracks = []
        tracks.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            guard case .object = item else { throw .badRequest("field tracks[\(i)] must be an object") }
            tracks.append(try Track(args: Args(item), field: "tracks[\(i)]"))
        }
        uri = try a.string("playlistUri", maxLength: 500)
        creator = try a.string("creator", maxLength: 200)
    }
}

/// `{venue, allowed}`
struct ExplicitArgs: VenueScoped {
    var venue: String
    var allowed: Bool
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        allowed = try a.bool("allowed")
    }
}

/// `{venue, explicitAllowed?, votesPerUserPerHour?, requestsPerUserPerHour?, noRepeatHours?, fairMode?, fairModeMaxPendingPerUser?}`
struct SettingsArgs: VenueScoped {
    var venue: String
    var patch: VenueSettingsPatch
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        patch = VenueSettingsPatch(explicitAllowed: try a.optionalBool("explicitAllowed"),
                                   votesPerUserPerHour: try a.optionalInt("votesPerUserPerHour"),
                                   requestsPerUserPerHour: try a.optionalInt("requestsPerUserPerHour"),
                                   noRepeatHours: try a.optionalInt("noRepeatHours"), fairMode: try a.optionalBool("fairMode"),
                                   fairModeMaxPendingPerUser: try a.optionalInt("fairModeMaxPendingPerUser"))
    }
}

/// `{venue, user}` (venue.owner.add)
struct OwnerArgs: OpArguments {
    var venue: String
    var user: String
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        user = try a.string("user", maxLength: 64)
    }
}

/// `{q}`
struct SearchArgs: OpArguments {
    var q: String
    init(_ a: Args) throws(ProtocolError) { q = try a.string("q", maxLength: 200) }
}

/// `{minLat, minLon, maxLat, maxLon}`
struct BoxArgs: OpArguments {
    var minLat, minLon, maxLat, maxLon: Double
    init(_ a: Args) throws(ProtocolError) {
        minLat = try a.double("minLat")
        minLon = try a.double("minLon")
        maxLat = try a.double("maxLat")
        maxLon = try a.double("maxLon")
    }
}

/// The whole request's arguments, kept for ops that read fields as they go (venue.register, venue.update).
/// `venue.register`: every field of a venue.
struct VenueRegisterArgs: OpArguments {
    var fields: VenueFields
    init(_ a: Args) throws(ProtocolError) { fields = try VenueFields(a) }
}

/// `venue.update`: the venue and the fields that change (the others keep their values, which only
/// its actor knows: the arguments are applied there).
struct VenueUpdateArgs: OpArguments {
    var venue: String
    var args: Args
    init(_ a: Args) throws(ProtocolError) {
        venue = try a.string("venue", maxLength: 64)
        _ = try VenueFields(a, base: VenueRecord.placeholder) // bad fields are refused before anything is touched
        args = a
    }
}

extension Track {
    /// A `Track` argument: `{uri, title, artist, explicit, durationMs?, coverUrl?}`; errors name the field.
    init(args: Args, field: String) throws(ProtocolError) {
        func text(_ k: String) throws(ProtocolError) -> String {
            guard args.has(k) else { throw .badRequest("missing field \(field).\(k)") }
            do { return try args.string(k, maxLength: 500) } catch {
                throw ProtocolError(error.code, error.message.replacingOccurrences(of: "field \(k)", with: "field \(field).\(k)"))
            }
        }
        let uri = try text("uri"), title = try text("title"), artist = try text("artist")
        let explicit: Bool
        do { explicit = try args.optionalBool("explicit") ?? false } catch { throw .badRequest("\(field).explicit must be true or false") }
        let duration: Int?
        do { duration = try args.optionalInt("durationMs") } catch { throw .badRequest("\(field).durationMs must be an integer") }
        let cover: String?
        do { cover = try args.optionalString("coverUrl", maxLength: 2000) } catch { throw .badRequest("\(field).coverUrl must be a string") }
        self.init(uri: uri, title: title, artist: artist, explicit: explicit, durationMs: duration, coverUrl: cover)
    }
}
