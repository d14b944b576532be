import Venues
import XCTest

/// A fixed evening: 2023-11-14T22:13:20Z.
let T0: Double = 1_700_000_000

func track(_ name: String, explicit: Bool = false) -> Track {
    Track(uri: "spotify:track:\(name)", title: "Song \(name)", artist: "Band \(name)", explicit: explicit,
          durationMs: 180_000, coverUrl: "https://i.example/\(name).jpg")
}

func uri(_ name: String) -> String { "spotify:track:\(name)" }
func uris(_ names: String...) -> [String] { names.map(uri) }

/// A venue with playlist `names` set at T0.
func jukebox(_ names: [String], settings: VenueSettings = VenueSettings()) throws -> Jukebox {
    var j = Jukebox(settings: settings)
    _ = try j.setPlaylist(uri: "spotify:playlist:friday", creator: "DJ Ana", tracks: names.map { track($0) }, now: T0)
    return j
}

/// The error `body` throws, or nil (and a failure) when it does not throw.
func jukeboxError<T>(_ body: @autoclosure () throws(JukeboxError) -> T,
                     file: StaticString = #filePath, line: UInt = #line) -> JukeboxError? {
    do {
        _ = try body()
        XCTFail("expected a JukeboxError", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

func XCTAssertJukeboxError<T>(_ body: @autoclosure () throws(JukeboxError) -> T, _ expected: JukeboxError,
                              _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    if let e = jukeboxError(try body(), file: file, line: line) {
        XCTAssertEqual(e, expected, message, file: file, line: line)
    }
}

/// `change` moved one track (a vote, an unvote, a request of a queued track).
func XCTAssertMoved(_ change: @autoclosure () throws -> some JukeboxOutcome, _ message: String = "",
                    file: StaticString = #filePath, line: UInt = #line) {
    do {
        switch try change().change {
        case .moved, .voted: break
        default: return XCTFail("not a move: \(message)", file: file, line: line)
        }
    } catch {
        XCTFail("threw \(error): \(message)", file: file, line: line)
    }
}

/// `change` is `track` entering the queue, requested by `by`.
func XCTAssertRequested(_ change: @autoclosure () throws -> some JukeboxOutcome, _ track: Track, by: String, _ message: String = "",
                        file: StaticString = #filePath, line: UInt = #line) {
    do {
        guard case .requested(let r) = try change().change, r.track == track, r.by == by else {
            return XCTFail("not a request of \(track.uri) by \(by): \(message)", file: file, line: line)
        }
    } catch {
        XCTFail("threw \(error): \(message)", file: file, line: line)
    }
}
