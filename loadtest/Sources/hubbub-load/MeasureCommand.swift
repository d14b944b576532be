import Accounts
import ArgumentParser
import CLinux
import Foundation
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// `measure`: in-process measurements that need no server (issue 10's figures).
struct MeasureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "measure", abstract: "In-process measurements: guessing-limit memory and pace, body parser throughput.",
        subcommands: [ThrottleMeasure.self, BodyMeasure.self])
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
