import Accounts
import ArgumentParser
import CLinux
import Foundation
import Routes
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// `measure`: in-process measurements that need no server (issue 10's figures).
struct MeasureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "measure", abstract: "In-process measurements: guessing limits, body parser, corridor index, XML, search, JSON.",
        subcommands: [ThrottleMeasure.self, BodyMeasure.self, CorridorMeasure.self, XMLMeasure.self, SearchMeasure.self, JSONMeasure.self])
}

/// Heap bytes in use (glibc's allocator), to measure what a structure holds.
private func heapInUse() -> Int { Int(clinux_heap_in_use()) }

/// `measure throttle`: the guessing limits' memory after N failed log-ins with random usernames,
/// and guesses evaluated per account per hour by an attacker going as fast as it is let.
struct ThrottleMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "throttle")

    @Option(help: "Failed attempts with random usernames.") var attempts = 1_000_000
    @Option(help: "Table bound (auth.maxTracked).") var maxTracked = 100_000

    func run() {
        var configuration = GuessingThrottle.Configuration()
        configuration.maxTracked = maxTracked
        var rng = SystemRandomNumberGenerator()
        for (label, randomAddresses) in [("one address", false), ("random addresses", true)] {
            let before = heapInUse()
            var throttle = GuessingThrottle(configuration: configuration)
            var refused = 0
            let start = ContinuousClock.now
            for i in 0..<attempts {
                let account = "?" + String(rng.next() as UInt64, radix: 36)
                let address = randomAddresses ? "\(rng.next() as UInt8).\(rng.next() as UInt8).\(rng.next() as UInt8).\(rng.next() as UInt8)"
                                              : "203.0.113.7"
                let now = Double(i) * 0.001 // 1,000 attempts a second
                if throttle.check(account: account, address: address, now: now) == nil {
                    throttle.failed(account: account, address: address, now: now)
                } else {
                    refused += 1
                }
            }
            let elapsed = ContinuousClock.now - start
            let held = heapInUse() - before
            let t = throttle.tracked
            print("\(attempts) failed log-ins, random usernames, \(label): \(refused) refused, tables \(t.accounts)/\(t.suspects)/\(t.addresses) "
                  + "(accounts/suspects/addresses), heap \(held / 1024) KiB (\(held / max(1, t.accounts + t.suspects + t.addresses)) B/entry), "
                  + "\(Int(Double(attempts) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))) attempts/s")
            withExtendedLifetime(throttle) {}
        }
        for addresses in [1, 100] {
            let guesses = GuessingThrottle.guessesEvaluated(fromAddresses: addresses, inSeconds: 3600)
            print("guesses evaluated on one account in one hour from \(addresses) address(es): \(guesses)")
        }
    }
}

/// `measure body`: HTTPBodyParser's throughput on a large chunked body fed in read-sized pieces,
/// for several chunk sizes, with a consumer that copies every piece it is handed (as a handler
/// buffering the body would), beside a plain copy of the same bytes (the floor any parser stands on).
struct BodyMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "body")

    @Option(help: "Body size in MB.") var megabytes = 100
    @Option(help: "Bytes per read.") var read = 65_536
    @Option(help: "Runs (the best is reported).") var runs = 5

    func run() {
        let size = megabytes << 20
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        for chunk in [16_384, 1_024, 64] {
            var wire: [UInt8] = []
            wire.reserveCapacity(size + size / chunk * 12 + 16)
            let data = (0..<chunk).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var left = size
            while left > 0 {
                let n = min(chunk, left)
                wire += Array(String(n, radix: 16).utf8) + [13, 10] + data[..<n] + [13, 10]
                left -= n
            }
            wire += Array("0\r\n\r\n".utf8)
            var best = Double.infinity, bestCopy = Double.infinity
            var target = [UInt8](repeating: 0, count: read)
            var sink = 0
            for _ in 0..<runs {
                var parser = HTTPBodyParser(framing: .chunked, limits: .init(maxBytes: .max))
                var ranges: [Range<Int>] = []
                var got = 0
                let start = ContinuousClock.now
                wire.withUnsafeBytes { all in
                    var at = 0
                    while at < all.count {
                        let piece = UnsafeRawBufferPointer(rebasing: all[at..<min(all.count, at + read)])
                        ranges.removeAll(keepingCapacity: true)
                        _ = parser.feed(piece, data: &ranges)
                        target.withUnsafeMutableBytes { out in
                            for r in ranges {
                                memcpy(out.baseAddress! + (got % read) / 2, piece.baseAddress! + r.lowerBound, min(r.count, read / 2))
                                got += r.count
                            }
                        }
                        at += read
                    }
                }
                best = min(best, seconds(ContinuousClock.now - start))
                precondition(got == size, "parsed \(got) of \(size) bytes")
                let copyStart = ContinuousClock.now
                wire.withUnsafeBytes { all in
                    var at = 0
                    while at < all.count {
                        let n = min(read, all.count - at)
                        target.withUnsafeMutableBytes { _ = memcpy($0.baseAddress!, all.baseAddress! + at, n) }
                        sink &+= Int(target[n - 1])
                        at += read
                    }
                }
                bestCopy = min(bestCopy, seconds(ContinuousClock.now - copyStart))
            }
            let mb = Double(wire.count) / 1_048_576
            print(String(format: "chunked body of %d MB in %d-byte chunks, %d-byte reads: parser + copying consumer %.0f MB/s; memcpy of the reads alone %.0f MB/s (best of %d)%@",
                         megabytes, chunk, read, mb / best, mb / bestCopy, runs, sink == -1 ? "!" : ""))
        }
    }
}

/// `measure corridors`: what finding an item's corridors costs with few and with many corridors
/// elsewhere in the city (it should not change), and the index's memory per corridor.
struct CorridorMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "corridors")

    @Option(help: "Lookups timed per run.") var lookups = 200_000
    @Option(help: "Corridor width in metres.") var width = 500.0

    func run() throws {
        var rng = SystemRandomNumberGenerator()
        func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * Double(rng.next() >> 11) / Double(1 << 53) }
        // A 40 km square city; posts land in a 1 km square in its middle, which 5 corridors cross.
        let centre = GeoPoint(41.02, 28.98)
        func cityPoint() -> GeoPoint { GeoPoint(centre.lat + uniform(-0.18, 0.18), centre.lon + uniform(-0.24, 0.24)) }
        func postPoint() -> GeoPoint { GeoPoint(centre.lat + uniform(-0.0045, 0.0045), centre.lon + uniform(-0.006, 0.006)) }
        for far in [10, 10_000] {
            let before = heapInUse()
            var index = CorridorIndex()
            for i in 0..<5 {
                let c = try Corridor(from: GeoPoint(centre.lat - 0.05, centre.lon - 0.02 + Double(i) * 0.01),
                                     to: GeoPoint(centre.lat + 0.05, centre.lon + 0.02 - Double(i) * 0.01), widthMeters: width)
                index.insert(c, id: "near\(i)")
            }
            let nearCount = index.count
            var made = 0
            while made < far {
                let from = cityPoint(), to = GeoPoint(from.lat + uniform(-0.05, 0.05), from.lon + uniform(-0.06, 0.06))
                let c = try Corridor(from: from, to: to, widthMeters: width)
                guard c.distance(from: centre) > 3_000 else { continue } // elsewhere: never near the posts
                index.insert(c, id: "far\(made)")
                made += 1
            }
            let held = heapInUse() - before
            let points = (0..<1024).map { _ in postPoint() }
            var found = 0
            var best = Double.infinity
            for _ in 0..<5 {
                let start = ContinuousClock.now
                for i in 0..<lookups { found &+= index.corridors(containing: points[i & 1023]).count }
                let d = ContinuousClock.now - start
                best = min(best, (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) / Double(lookups))
            }
            print(String(format: "%5d far corridors + %d near: finding a post's corridors %.0f ns (best of 5; %.1f found on average); "
                         + "index %d KiB, %.0f B and %.1f cells per corridor",
                         far, nearCount, best * 1e9, Double(found) / Double(5 * lookups), held / 1024,
                         Double(held) / Double(index.count), Double(index.registrations) / Double(index.count)))
        }
        // A busy hub: 300 corridors from across the city, each with a stop on the way, end at it,
        // and posts land within half a kilometre of it, in the cells they all cross (rush hour's
        // convergence: what a post or a like near a station costs the intel hub).
        var hub = CorridorIndex()
        for i in 0..<300 {
            let from = cityPoint()
            let via = GeoPoint((from.lat + centre.lat) / 2 + uniform(-0.02, 0.02), (from.lon + centre.lon) / 2 + uniform(-0.02, 0.02))
            hub.insert(try Corridor(from: from, via: [via], to: centre, widthMeters: width), id: "hub\(i)")
        }
        let near = (0..<1024).map { _ in GeoPoint(centre.lat + uniform(-0.0045, 0.0045), centre.lon + uniform(-0.006, 0.006)) }
        var found = 0
        var best = Double.infinity
        for _ in 0..<5 {
            let start = ContinuousClock.now
            for i in 0..<(lookups / 10) { found &+= hub.corridors(containing: near[i & 1023]).count }
            let d = ContinuousClock.now - start
            best = min(best, (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) / Double(lookups / 10))
        }
        print(String(format: "  300 corridors converging on a hub: finding a post's corridors %.0f ns (best of 5; %.1f found on average)",
                     best * 1e9, Double(found) / Double(5 * (lookups / 10))))
    }
}
