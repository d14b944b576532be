import Foundation
import Realtime

/// A load scenario, read from a JSON file in `config/scenarios/`. See `config/scenarios/README.md`
/// for every field, its default and its range.
public struct Scenario: Sendable, Equatable {
    /// What the scenario drives.
    public enum Kind: String, Sendable, Equatable {
        /// Venues at peak hours: patrons arrive, vote, request, leave; owners play tracks.
        case venues
        /// Echo microbenchmark against any WebSocket echo endpoint.
        case echo
        /// Fan-out microbenchmark: one room (any broadcast endpoint), C subscribers, P publishers.
        case fanout
        /// Travellers at rush hour: each subscribes to its commute's corridor, posts, likes and
        /// comments; a provider may post bursts over HTTP.
        case routes
        /// Event-goers in the early evening: suggestions, announcements and changes of followed
        /// events while the event feed is ingested and re-ingested with changes.
        case tonight
    }

    public var name: String
    public var description: String
    public var kind: Kind
    /// Measured seconds (after set-up, before draining).
    public var durationSeconds: Double
    /// Seconds after the last action during which pushes are still awaited.
    public var drainSeconds: Double
    public var client: ClientSettings
    public var thresholds: [Threshold]
    public var venues: VenueSettings?
    public var echo: EchoSettings?
    public var fanout: FanoutSettings?
    public var routes: RouteSettings?
    public var tonight: TonightSettings?

    /// How the harness's own clients behave.
    public struct ClientSettings: Sendable, Equatable {
        /// Client event loops (threads).
        public var loops = 1
        /// Offer permessage-deflate.
        public var compression = false
        /// Connections being opened at once.
        public var connectConcurrency = 256
        /// Source addresses 127.0.0.1, 127.0.0.2, ... used round robin (each has its own ~28,000 ports).
        public var sourceAddresses = 1
        /// Microseconds a client loop polls before sleeping.
        public var spinMicros = 50
    }

    /// The peak-hours model.
    public struct VenueSettings: Sendable, Equatable {
        public var count: Int
        public var patronsPerVenue: Int
        public var tracksPerPlaylist: Int
        /// The night being simulated, compressed into `durationSeconds`.
        public var clock: NightClock
        /// Share of each venue's patrons present over the night (piecewise linear).
        public var present: Curve
        public var maxArrivalsPerSecond: Double
        public var maxDeparturesPerSecond: Double
        /// Patrons check in on arrival.
        public var checkIn: Bool
        /// Pause between a patron's arrival steps (connect, auth, check in, subscribe), uniform in range.
        public var thinkTimeMillis: ClosedRange<Double>
        public var votesPerPatronPerMinute: Double
        public var requestsPerPatronPerMinute: Double
        /// Share of actions that take back an earlier vote.
        public var unvoteShare: Double
        /// Each venue's player: a track ends every `trackSeconds` (0: never) and the next is pinned.
        public var trackSeconds: Double
        /// The owner sets a new playlist every so many seconds (0: never).
        public var playlistChangeSeconds: Double
        public var reconnectStorms: [ReconnectStorm]
        /// A patron whose connection the server closes or loses (a node dies, it restarts) comes
        /// back after up to this many seconds, to the next URL, subscribing with `since`
        /// (0: it is gone for the night, as it was before several nodes).
        public var resumeAfterDropSeconds: Double = 0
    }

    /// A share of the present patrons drop their connection at once and come back.
    public struct ReconnectStorm: Sendable, Equatable {
        /// Scenario seconds from the start.
        public var atSeconds: Double
        public var share: Double
        /// Reconnections are spread over this many seconds.
        public var spreadSeconds: Double
        /// Re-subscribe with `since` (else plain subscribe with a snapshot).
        public var withSince: Bool

        public init(atSeconds: Double, share: Double, spreadSeconds: Double, withSince: Bool) {
            self.atSeconds = atSeconds
            self.share = share
            self.spreadSeconds = spreadSeconds
            self.withSince = withSince
        }
    }

    public struct EchoSettings: Sendable, Equatable {
        public var path: String
        public var connections: Int
        public var messageBytes: Int
        public var inflight: Int
        public var warmupSeconds: Double
    }

    public struct FanoutSettings: Sendable, Equatable {
        public var path: String
        public var subscribers: Int
        public var publishers: Int
        public var messagesPerSecondPerPublisher: Double
        public var messageBytes: Int
    }

    /// Reads a scenario file.
    public static func load(path: String) throws -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else { throw ScenarioError("cannot read \(path)") }
        do {
            return try parse(Array(data))
        } catch {
            throw ScenarioError("\(path): \(error)")
        }
    }

    /// Parses a scenario from JSON text.
    public static func parse(_ bytes: [UInt8]) throws(ScenarioError) -> Scenario {
        let json: JSON
        do { json = try JSONParser.parse(bytes) } catch { throw ScenarioError("\(error)") }
        var r = try ScenarioReader(json, path: "")
        guard let name = try r.string("name"), !name.isEmpty else { throw ScenarioError("name is missing") }
        guard let kindName = try r.string("kind") else { throw ScenarioError("kind is missing (venues, routes, tonight, echo or fanout)") }
        guard let kind = Kind(rawValue: kindName) else { throw ScenarioError("kind must be venues, routes, tonight, echo or fanout, not \(kindName)") }
        var s = Scenario(name: name, description: try r.string("description", default: ""), kind: kind,
                         durationSeconds: try r.double("durationSeconds", in: 0.1...86_400, default: 10),
                         drainSeconds: try r.double("drainSeconds", in: 0...600, default: 2),
                         client: ClientSettings(), thresholds: [])
        if var c = try r.object("client") {
            s.client.loops = try c.int("loops", in: 1...64, default: 1)
            s.client.compression = try c.bool("compression", default: false)
            s.client.connectConcurrency = try c.int("connectConcurrency", in: 1...100_000, default: 256)
            s.client.sourceAddresses = try c.int("sourceAddresses", in: 1...250, default: 1)
            s.client.spinMicros = try c.int("spinMicros", in: 0...10_000, default: 50)
            try c.finish()
        }
        if var t = try r.object("thresholds") { s.thresholds = try Threshold.read(&t) }
        switch kind {
        case .venues:
            guard var v = try r.object("venues") else { throw ScenarioError("venues is missing (kind venues)") }
            s.venues = try readVenues(&v, duration: s.durationSeconds)
        case .echo:
            guard var e = try r.object("echo") else { throw ScenarioError("echo is missing (kind echo)") }
            s.echo = EchoSettings(path: try e.string("path", default: "/echo"),
                                  connections: try e.int("connections", in: 1...1_000_000, default: 100),
                                  messageBytes: try e.int("messageBytes", in: 16...16 << 20, default: 32),
                                  inflight: try e.int("inflight", in: 1...1000, default: 1),
                                  warmupSeconds: try e.double("warmupSeconds", in: 0...600, default: 1))
            try e.finish()
        case .fanout:
            guard var f = try r.object("fanout") else { throw ScenarioError("fanout is missing (kind fanout)") }
            s.fanout = FanoutSettings(path: try f.string("path", default: "/broadcast"),
                                      subscribers: try f.int("subscribers", in: 1...1_000_000, default: 1000),
                                      publishers: try f.int("publishers", in: 1...10_000, default: 1),
                                      messagesPerSecondPerPublisher: try f.double("messagesPerSecondPerPublisher", in: 0.01...1_000_000, default: 100),
                                      messageBytes: try f.int("messageBytes", in: 16...1 << 20, default: 64))
            try f.finish()
        case .routes:
            guard var t = try r.object("routes") else { throw ScenarioError("routes is missing (kind routes)") }
            s.routes = try readRoutes(&t, duration: s.durationSeconds)
        case .tonight:
            guard var t = try r.object("tonight") else { throw ScenarioError("tonight is missing (kind tonight)") }
            s.tonight = try readTonight(&t, duration: s.durationSeconds)
        }
        try r.finish()
        for t in s.thresholds where !t.metric.applies(to: kind) {
            throw ScenarioError("thresholds.\(t.key) does not apply to a \(kind.rawValue) scenario")
        }
        return s
    }

    private static func readVenues(_ v: inout ScenarioReader, duration: Double) throws(ScenarioError) -> VenueSettings {
        let count = try v.int("count", in: 1...100_000, default: 10)
        let patrons = try v.int("patronsPerVenue", in: 1...1_000_000, default: 50)
        let tracks = try v.int("tracksPerPlaylist", in: 2...1000, default: 40)
        let clock = try NightClock(from: try v.string("clockFrom", default: "18:00"), to: try v.string("clockTo", default: "23:00"),
                                   seconds: duration)
        let present = try readPresent(&v, clock: clock)
        let thinkMin = try v.double("thinkTimeMinMs", in: 0...60_000, default: 50)
        let thinkMax = try v.double("thinkTimeMaxMs", in: 0...60_000, default: 500)
        guard thinkMin <= thinkMax else { throw ScenarioError("venues.thinkTimeMinMs must not exceed venues.thinkTimeMaxMs") }
        var storms: [ReconnectStorm] = []
        for (i, item) in (try v.array("reconnectStorms") ?? []).enumerated() {
            var st = try ScenarioReader(item, path: "venues.reconnectStorms[\(i)]")
            guard let at = try st.string("at") else { throw ScenarioError("venues.reconnectStorms[\(i)].at is missing") }
            let t: Double
            do { t = try clock.seconds(at: at) } catch { throw ScenarioError("venues.reconnectStorms[\(i)].at: \(error.description)") }
            storms.append(ReconnectStorm(atSeconds: t, share: try st.double("share", in: 0...1, default: 0.2),
                                         spreadSeconds: try st.double("spreadSeconds", in: 0...600, default: 1),
                                         withSince: try st.bool("withSince", default: true)))
            try st.finish()
        }
        let settings = VenueSettings(
            count: count, patronsPerVenue: patrons, tracksPerPlaylist: tracks, clock: clock, present: present,
            maxArrivalsPerSecond: try v.double("maxArrivalsPerSecond", in: 0.01...1_000_000, default: 500),
            maxDeparturesPerSecond: try v.double("maxDeparturesPerSecond", in: 0.01...1_000_000, default: 500),
            checkIn: try v.bool("checkIn", default: true), thinkTimeMillis: thinkMin...thinkMax,
            votesPerPatronPerMinute: try v.double("votesPerPatronPerMinute", in: 0...6000, default: 1),
            requestsPerPatronPerMinute: try v.double("requestsPerPatronPerMinute", in: 0...6000, default: 0.1),
            unvoteShare: try v.double("unvoteShare", in: 0...1, default: 0.05),
            trackSeconds: try v.double("trackSeconds", in: 0...86_400, default: 30),
            playlistChangeSeconds: try v.double("playlistChangeSeconds", in: 0...86_400, default: 0),
            reconnectStorms: storms.sorted { $0.atSeconds < $1.atSeconds },
            resumeAfterDropSeconds: try v.double("resumeAfterDropSeconds", in: 0...600, default: 0))
        try v.finish()
        return settings
    }

    /// A `present` curve (`[{"at": "HH:MM", "share": 0…1}]` on `clock`); absent: everyone, all along.
    static func readPresent(_ r: inout ScenarioReader, clock: NightClock) throws(ScenarioError) -> Curve {
        let path = r.path + ".present"
        var points: [Curve.Point] = []
        if let list = try r.array("present") {
            for (i, item) in list.enumerated() {
                var p = try ScenarioReader(item, path: "\(path)[\(i)]")
                guard let at = try p.string("at") else { throw ScenarioError("\(path)[\(i)].at is missing") }
                guard let share = try p.double("share", in: 0...1) else { throw ScenarioError("\(path)[\(i)].share is missing") }
                try p.finish()
                let t: Double
                do { t = try clock.seconds(at: at) } catch { throw ScenarioError("\(path)[\(i)].at: \(error.description)") }
                points.append(.init(t: t, value: share))
            }
        } else {
            points = [.init(t: 0, value: 1)]
        }
        do { return try Curve(points) } catch { throw ScenarioError("\(path): \(error.description)") }
    }

    /// The same scenario with its crowd or connection counts multiplied (for finding the largest
    /// size a machine holds without editing files).
    public func scaled(by factor: Double) -> Scenario {
        guard factor != 1 else { return self }
        var s = self
        func scale(_ n: Int) -> Int { max(1, Int((Double(n) * factor).rounded())) }
        if var v = s.venues { v.count = scale(v.count); s.venues = v }
        if var t = s.routes { t.travellers = scale(t.travellers); s.routes = t }
        if var t = s.tonight { t.users = scale(t.users); s.tonight = t }
        if var e = s.echo { e.connections = scale(e.connections); s.echo = e }
        if var f = s.fanout { f.subscribers = scale(f.subscribers); s.fanout = f }
        return s
    }

    /// The same scenario over `seconds`: a venue night or a rush hour keeps its shape (clock, crowd
    /// curve and storms are stretched or squeezed alike).
    public func withDuration(_ seconds: Double) -> Scenario {
        var s = self
        let factor = seconds / durationSeconds
        s.durationSeconds = seconds
        guard factor != 1 else { return s }
        func stretch(_ c: Curve) -> Curve { (try? Curve(c.points.map { .init(t: $0.t * factor, value: $0.value) })) ?? c }
        if var v = s.venues {
            v.clock = v.clock.over(seconds: seconds)
            v.present = stretch(v.present)
            v.reconnectStorms = v.reconnectStorms.map { var st = $0; st.atSeconds *= factor; return st }
            s.venues = v
        }
        if var t = s.routes {
            t.clock = t.clock.over(seconds: seconds)
            t.present = stretch(t.present)
            s.routes = t
        }
        return s
    }

    /// A duration as `--duration` takes it: seconds (`90`, `90s`), minutes (`30m`) or hours
    /// (`1.5h`), within a scenario file's range (0.1 s … 24 h); nil otherwise.
    public static func seconds(fromDuration text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        var number = Substring(text)
        var factor = 1.0
        if let last = number.last, let f = units[last] {
            factor = f
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite else { return nil }
        let seconds = value * factor
        return (0.1...86_400).contains(seconds) ? seconds : nil
    }

    /// A factor as `--scale` takes it: above 0, at most 1000 (a file's largest crowd a thousand
    /// times over still counts in an Int, connections included); nil otherwise, so that `scaled`
    /// never meets a NaN, an infinity or a count past Int.max.
    public static func scale(fromArgument text: String) -> Double? {
        guard let factor = Double(text), factor > 0, factor <= 1000 else { return nil }
        return factor
    }

    /// Every connection the scenario may hold at once (for file-descriptor limits).
    public var peakConnections: Int {
        switch kind {
        case .venues: return (venues?.count ?? 0) * ((venues?.patronsPerVenue ?? 0) + 1) + 1
        case .echo: return echo?.connections ?? 0
        case .fanout: return (fanout?.subscribers ?? 0) + (fanout?.publishers ?? 0)
        case .routes: return (routes?.travellers ?? 0) + 1
        case .tonight: return (tonight?.users ?? 0) + 1
        }
    }
}
