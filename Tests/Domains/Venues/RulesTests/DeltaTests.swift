import Venues
import XCTest

/// What a change reports is enough for a client to keep the queue: applying each `.moved` and
/// `.requested` (or, for the rest, taking the whole order) to a copy gives exactly `order`.
final class DeltaTests: XCTestCase {
    /// A client's copy of the queue, kept from the changes alone.
    struct Mirror {
        var order: [String]

        mutating func apply(_ change: JukeboxChange, _ j: Jukebox) {
            switch change {
            case .moved(let uri, let index):
                order.removeAll { $0 == uri }
                order.insert(uri, at: index)
            case .voted(let counted):
                order.removeAll { $0 == counted.vote.uri }
                order.insert(counted.vote.uri, at: counted.index)
            case .requested(let r) where r.index != nil:
                order.insert(r.track.uri, at: r.index!)
            default:
                order = j.order // playlist.reordered / snapshot carry the whole order
            }
        }
    }

    func testMovesAndRequestsKeepAClientsCopyExact() throws {
        for fair in [false, true] {
            var rng = SystemRandomNumberGenerator()
            var settings = VenueSettings(votesPerUserPerHour: 1000, requestsPerUserPerHour: 1000)
            settings.fairMode = fair
            var j = try jukebox((0..<30).map { "t\($0)" }, settings: settings)
            var mirror = Mirror(order: j.order)
            var now = T0
            var requested = 0
            for step in 0..<3000 {
                now += 1
                let user = "u\(Int.random(in: 0..<25, using: &rng))"
                let uri = j.order.isEmpty ? nil : j.order.randomElement(using: &rng)
                let change: JukeboxChange?
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<55: change = uri.flatMap { try? j.vote(user: user, uri: $0, now: now).change }
                case 55..<75: change = uri.flatMap { try? j.unvote(user: user, uri: $0) }
                case 75..<90:
                    requested += 1
                    change = try? j.request(user: user, track: track("r\(requested % 60)"), now: now).change
                case 90..<94: change = uri.flatMap { try? j.trackEnded(uri: $0, now: now) }
                case 94..<97: change = uri.flatMap { try? j.nowPlaying(uri: $0) }
                case 97..<99: change = try? j.clearVotes()
                default: change = try? j.reset()
                }
                if let change { mirror.apply(change, j) }
                XCTAssertEqual(mirror.order, j.order, "fair \(fair), step \(step), after \(String(describing: change))")
                if mirror.order != j.order { return }
            }
        }
    }

    func testAVoteReportsTheTracksNewPlace() throws {
        var j = try jukebox(["a", "b", "c"])
        XCTAssertEqual(try j.vote(user: "u1", uri: uri("c"), now: T0).index, 0)
        XCTAssertEqual(try j.vote(user: "u2", uri: uri("b"), now: T0).index, 0, "ties by time of entry: b entered before c")
        _ = try j.nowPlaying(uri: uri("a"))
        XCTAssertEqual(try j.vote(user: "u1", uri: uri("a"), now: T0).index, 0, "the pinned track stays on top")
        XCTAssertEqual(try j.unvote(user: "u1", uri: uri("c")), .moved(uri: uri("c"), index: 2))
    }
}
