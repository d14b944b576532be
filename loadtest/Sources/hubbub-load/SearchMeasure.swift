import ArgumentParser
import Foundation
import Histogram
import StreamingXML
import Tonight
import TonightService

/// `measure search`: `artist.search`'s type-ahead over a feed's artists, in process: every prefix
/// of 1 to 6 characters of random artists' names and words (as each key stroke sends it), timed one
/// by one; p50, p99, max.
struct SearchMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search")

    @Option(help: "The feed (e.g. made with scripts/gen-feed.py).") var file: String
    @Option(help: "Queries timed.") var queries = 200_000
    @Option(help: "Results per query (artist.search's limit).") var limit = 10

    func run() throws {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ValidationError("cannot read \(file)") }
        var artists: [FeedRecord] = []
        let reader = EventFeedReader(onRecord: { r, _ in if case .artist = r { artists.append(r) } }, onReject: { _ in })
        let parser = StreamingXMLParser(handler: reader)
        // In pieces, as a body arrives (libxml2 refuses one push of a whole large feed).
        while let data = try handle.read(upToCount: 1 << 16), !data.isEmpty { try data.withUnsafeBytes { try parser.feed($0) } }
        try parser.finish()
        var catalog = EventCatalog(artists)
        let names = artists.compactMap { if case .artist(let a) = $0 { a.name } else { nil } }
        guard !names.isEmpty else { throw ValidationError("no artists in \(file)") }
        let built = ContinuousClock.now
        _ = catalog.searchArtists("a", limit: limit) // builds the index
        let buildTime = (ContinuousClock.now - built).components
        let buildMs = Double(buildTime.seconds) * 1000 + Double(buildTime.attoseconds) / 1e15
        var typed: [String] = []
        var rng = SystemRandomNumberGenerator()
        while typed.count < queries {
            let words = names.randomElement(using: &rng)!.split(separator: " ")
            let word = words.randomElement(using: &rng)!
            for n in 1...min(6, word.count) { typed.append(String(word.prefix(n))) }
        }
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        var found = 0
        for q in typed.prefix(queries) {
            let t0 = ContinuousClock.now
            found += catalog.searchArtists(q, limit: limit).count
            let d = (ContinuousClock.now - t0).components
            _ = histogram.record(UInt64(d.seconds) * 1_000_000_000 + UInt64(d.attoseconds / 1_000_000_000))
        }
        func us(_ p: Double) -> String { String(format: "%.1f", Double(histogram.valueAtPercentile(p)) / 1000) }
        print("artist.search over \(names.count) artists (index built in \(String(format: "%.0f", buildMs)) ms): \(min(queries, typed.count)) queries, "
              + "\(found) results; p50 \(us(50)) µs, p99 \(us(99)) µs, p99.9 \(us(99.9)) µs, max \(String(format: "%.1f", Double(histogram.max) / 1000)) µs")
    }
}
