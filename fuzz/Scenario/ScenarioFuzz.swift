// libFuzzer target for the load harness's scenario files (loadtest/Sources/LoadHarness:
// `Scenario.parse` over `ScenarioReader`, with the settings it fills), and what `hubbub-load run`
// does with a scenario next (`--scale`, `--duration`): .build-fuzz/fuzz-scenario.
//
// Input: a first line `SCALE DURATION` (the command line's arguments), then the scenario's JSON.
//
// Invariants:
// - any bytes give a scenario or a `ScenarioError` with a reason, never a trap; the same bytes
//   give the same scenario;
// - an accepted scenario is within the ranges config/scenarios/README.md gives (its duration,
//   drain, think times in order, crowd curves and storms in time order);
// - scaling it by any `--scale` the command accepts, and giving it any `--duration` it accepts,
//   never traps, keeps every count at least 1 and the storms and curves in order.

import LoadHarness

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.count
    let arguments = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ").map(String.init)
    let json = Array(bytes[min(newline + 1, bytes.count)...])
    let scenario: Scenario
    do throws(ScenarioError) {
        scenario = try Scenario.parse(json)
    } catch {
        check(!error.description.isEmpty, "a refusal without a reason")
        return 0
    }
    check((try? Scenario.parse(json)) == scenario, "the same bytes parse to another scenario")
    checkRanges(scenario)
    if let text = arguments.first, let factor = Scenario.scale(fromArgument: text) { checkRanges(scenario.scaled(by: factor)) }
    if arguments.count > 1, let seconds = Scenario.seconds(fromDuration: arguments[1]) {
        let stretched = scenario.withDuration(seconds)
        check(stretched.durationSeconds == seconds, "withDuration(\(seconds)) lasts \(stretched.durationSeconds)")
        checkRanges(stretched)
    }
    return 0
}

func inOrder(_ values: [Double]) -> Bool { zip(values, values.dropFirst()).allSatisfy { $0 <= $1 } }

func checkRanges(_ s: Scenario) {
    check(!s.name.isEmpty && (0.1...86_400).contains(s.durationSeconds) && (0...600).contains(s.drainSeconds), "name, duration or drain: \(s)")
    check(s.peakConnections >= 1, "peak connections \(s.peakConnections)")
    check(s.thresholds.allSatisfy { $0.limit.isFinite && $0.limit >= 0 }, "thresholds \(s.thresholds)")
    switch s.kind {
    case .venues:
        guard let v = s.venues else { fatalError("invariant broken: a venues scenario without venues") }
        check(v.count >= 1 && v.patronsPerVenue >= 1 && v.thinkTimeMillis.lowerBound <= v.thinkTimeMillis.upperBound, "venues \(v)")
        check(inOrder(v.present.points.map(\.t)) && inOrder(v.reconnectStorms.map(\.atSeconds)), "venue curve or storms out of order")
    case .routes:
        guard let r = s.routes else { fatalError("invariant broken: a routes scenario without routes") }
        check(r.travellers >= 1 && inOrder(r.present.points.map(\.t)), "routes \(r)")
    case .tonight:
        guard let t = s.tonight else { fatalError("invariant broken: a tonight scenario without tonight") }
        check(t.users >= 1, "tonight \(t)")
    case .echo:
        check((s.echo?.connections ?? 0) >= 1, "echo \(String(describing: s.echo))")
    case .fanout:
        check((s.fanout?.subscribers ?? 0) >= 1, "fanout \(String(describing: s.fanout))")
    }
}
