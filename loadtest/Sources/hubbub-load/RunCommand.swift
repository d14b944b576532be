import ArgumentParser
import Foundation
import HubbubClient
import LoadHarness

/// `run`: plays a scenario file against a server (and, for echo and fanout, against peers too),
/// prints a summary, writes result.json, summary.txt and report.html, and exits 1 when a
/// threshold of the scenario failed.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run a scenario file (config/scenarios/*.json) and report.",
        discussion: """
            Venue scenarios talk to Hubbub's /ws; echo and fanout scenarios to any server with a plain echo or \
            broadcast endpoint (Hubbub's needs --bench). Exit status: 0 all thresholds passed, 1 a threshold \
            failed, 2 the run could not be set up.
            """)

    @Argument(help: "Scenario file, or the name of one in config/scenarios (smoke, friday-night, ...).") var scenario: String
    @Option(help: "Server to test: ws:// or wss://, with or without the endpoint path; several nodes of one service comma-separated (clients are spread over them).")
    var url = "ws://127.0.0.1:8080"
    @Option(help: "Name of the server under test, in reports.") var name = "hubbub"
    @Option(help: "Its pid, to sample CPU and RSS from /proc.") var serverPid: Int32?
    @Option(parsing: .singleValue, help: "Also run against a peer: NAME=URL (echo and fanout only; repeatable).") var compare: [String] = []
    @Option(parsing: .singleValue, help: "A peer's pid for sampling: NAME=PID (repeatable).") var comparePid: [String] = []
    @Option(help: "Directory for result.json, summary.txt and report.html.") var out = "loadtest/results/latest"
    @Option(help: "Multiply the crowd (venues, travellers) or connection counts: above 0, at most 1000.") var scale: ScaleArgument?
    @Option(help: "Override the scenario's measured duration: seconds, or with a unit (90s, 30m, 2h; at most 24h).")
    var duration: DurationArgument?
    @Option(help: "Override the client loops (threads).") var loops: Int?
    @Option(help: "Override fanout.messagesPerSecondPerPublisher (fanout scenarios).") var publishRate: Double?
    @Option(help: "Override venues.votesPerPatronPerMinute (venue scenarios).") var votesPerMinute: Double?
    @Option(help: "Override venues.resumeAfterDropSeconds: patrons whose connection the server drops come back to the next URL with since within this many seconds (venue scenarios).")
    var resumeAfterDrop: Double?
    @Flag(help: "Offer permessage-deflate, whatever the scenario says.") var compression = false
    @Option(help: "Override routes.providerBurstItems (routes scenarios; 0: no provider).") var providerBurstItems: Int?
    @Option(help: "The server's operator key (api.key), for a routes scenario's provider (POST /api/intel).") var apiKey: String?

    func run() async throws {
        var s: Scenario
        do {
            s = try Scenario.load(path: Self.resolve(scenario))
        } catch {
            FileHandle.standardError.write(Data("hubbub-load: \(error)\n".utf8))
            throw ExitCode(2)
        }
        s = s.scaled(by: scale?.factor ?? 1)
        if let duration { s = s.withDuration(duration.seconds) }
        if let loops { s.client.loops = loops }
        if compression { s.client.compression = true }
        if let publishRate, var f = s.fanout {
            f.messagesPerSecondPerPublisher = publishRate
            s.fanout = f
        }
        if let votesPerMinute, var v = s.venues {
            v.votesPerPatronPerMinute = votesPerMinute
            s.venues = v
        }
        if let resumeAfterDrop, var v = s.venues {
            v.resumeAfterDropSeconds = max(0, resumeAfterDrop)
            s.venues = v
        }
        if !compare.isEmpty && (s.kind == .venues || s.kind == .routes) {
            FileHandle.standardError.write(Data("hubbub-load: --compare needs an echo or fanout scenario (peers do not speak Hubbub's protocol)\n".utf8))
            throw ExitCode(2)
        }
        if let providerBurstItems, var r = s.routes {
            r.providerBurstItems = max(0, providerBurstItems)
            s.routes = r
        }
        if let r = s.routes, r.providerBurstItems > 0, apiKey?.isEmpty ?? true {
            FileHandle.standardError.write(Data("hubbub-load: routes.providerBurstItems needs --api-key (the server's api.key) for POST /api/intel\n".utf8))
            throw ExitCode(2)
        }
        var targets: [(String, String, Int32?)] = [(name, url, serverPid)]
        let pids = Dictionary(comparePid.compactMap { p -> (String, Int32)? in
            let kv = p.split(separator: "=", maxSplits: 1)
            return kv.count == 2 ? (String(kv[0]), Int32(kv[1]) ?? 0) : nil
        }, uniquingKeysWith: { $1 })
        for c in compare {
            let kv = c.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { throw ValidationError("--compare wants NAME=URL, not \(c)") }
            targets.append((String(kv[0]), String(kv[1]), pids[String(kv[0])]))
        }

        var reports: [RunReport] = []
        for (target, url, pid) in targets {
            do {
                let report = try await ScenarioRunner(scenario: s, target: target, url: url, serverPid: pid, apiKey: apiKey).run()
                print(report.table)
                print("")
                reports.append(report)
            } catch {
                FileHandle.standardError.write(Data("\nhubbub-load: \(target): \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        let file = ResultFile(runs: reports)
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try file.json().write(to: URL(fileURLWithPath: out + "/result.json"))
        try (reports.map(\.table).joined(separator: "\n\n") + "\n").write(toFile: out + "/summary.txt", atomically: true, encoding: .utf8)
        try HTMLReport.render(file).write(toFile: out + "/report.html", atomically: true, encoding: .utf8)
        print("wrote \(out)/result.json, summary.txt, report.html")
        if !file.passed { throw ExitCode(1) }
    }

    /// A bare name means config/scenarios/NAME.json.
    static func resolve(_ s: String) -> String {
        if s.contains("/") || s.hasSuffix(".json") { return s }
        return "config/scenarios/\(s).json"
    }
}

/// `--scale`: a factor above 0, at most 1000.
struct ScaleArgument: ExpressibleByArgument {
    var factor: Double

    init?(argument: String) {
        guard let f = Scenario.scale(fromArgument: argument) else { return nil }
        factor = f
    }
}

/// `--duration`: seconds (`1800`, `1800s`), minutes (`30m`) or hours (`2h`).
struct DurationArgument: ExpressibleByArgument {
    var seconds: Double

    init?(argument: String) {
        guard let s = Scenario.seconds(fromDuration: argument) else { return nil }
        seconds = s
    }
}

/// Runs one scenario against one server.
struct ScenarioRunner {
    let scenario: Scenario
    let target: String
    let url: String
    let serverPid: Int32?
    var apiKey: String?

    func run() async throws -> RunReport {
        let startedAt = Date()
        let path: String
        switch scenario.kind {
        case .venues, .routes, .tonight: path = "/ws"
        case .echo: path = scenario.echo!.path
        case .fanout: path = scenario.fanout!.path
        }
        // A URL with its own path is used as given (peers may serve their endpoints elsewhere).
        let parsed = try ClientURL(String(url.split(separator: ",").first ?? ""))
        let hasPath = parsed.path != "/" && !parsed.path.isEmpty
        let fleet = try ClientFleet(url: url, path: hasPath ? "" : path, settings: scenario.client,
                                    expectedConnections: scenario.peakConnections)
        defer { fleet.shutdown() }
        FileHandle.standardError.write(Data("\(scenario.name) against \(target) (\(url)): setting up\n".utf8))

        func report(_ recorder: RunRecorder, total: Interval? = nil, opened: Int, wanted: Int, failures: [String: Int] = [:],
                    setup: Double, extra: [String: Double] = [:]) -> RunReport {
            RunReport(scenario: scenario, target: target, url: url, startedAt: startedAt, seconds: recorder.elapsed,
                      total: total ?? recorder.total, connectionsOpened: opened, connectionsWanted: wanted, connectFailures: failures,
                      setupSeconds: setup, timeline: recorder.timeline, server: recorder.server, harness: recorder.harness, extra: extra)
        }

        switch scenario.kind {
        case .venues:
            let run = VenueRun(scenario: scenario, fleet: fleet)
            try await run.seed()
            let setup = Date().timeIntervalSince(startedAt)
            _ = await fleet.harvest() // set-up traffic is not measured
            let v = scenario.venues!
            let recorder = RunRecorder(fleet: fleet, serverPid: serverPid, clockLabel: { v.clock.clock(at: $0) })
            await run.play(recorder: recorder)
            await drain(recorder)
            recorder.finishLine()
            await run.closeAll()
            return report(recorder, opened: run.patrons.count + run.owners.count, wanted: scenario.peakConnections - 1, setup: setup,
                          extra: ["patrons": Double(run.patrons.count), "venues": Double(run.owners.count),
                                  "patronsPresentPeak": Double(recorder.timeline.map(\.connections).max() ?? 0)])
        case .routes:
            if parsed.secure && scenario.routes!.providerBurstItems > 0 {
                throw LoadError("the provider posts over plain HTTP (POST /api/intel): give a ws:// URL")
            }
            let run = RouteRun(scenario: scenario, fleet: fleet)
            try await run.seed()
            let setup = Date().timeIntervalSince(startedAt)
            _ = await fleet.harvest() // set-up traffic is not measured
            let r = scenario.routes!
            let recorder = RunRecorder(fleet: fleet, serverPid: serverPid, clockLabel: { r.clock.clock(at: $0) })
            run.startProvider(host: parsed.host, port: parsed.port, apiKey: apiKey ?? "")
            await run.play(recorder: recorder)
            await drain(recorder)
            recorder.finishLine()
            let watches = await run.closeWatches()
            let audit = DeliveryAudit.audit(watches: watches, posts: run.ledger.posts)
            await run.closeAll()
            var total = recorder.total
            total.violations.undelivered = audit.undelivered
            var extra = run.figures(audit: audit)
            extra["travellersPresentPeak"] = Double(recorder.timeline.map(\.connections).max() ?? 0)
            return report(recorder, total: total, opened: run.travellers.count, wanted: scenario.peakConnections - 1, setup: setup,
                          extra: extra)
        case .tonight:
            guard !parsed.secure else { throw LoadError("the feeds are posted over plain HTTP: give a ws:// URL") }
            guard let apiKey, !apiKey.isEmpty else { throw LoadError("a tonight scenario posts feeds: give --api-key (the server's api.key)") }
            let run = TonightRun(scenario: scenario, fleet: fleet)
            try await run.seed(host: parsed.host, port: parsed.port, apiKey: apiKey)
            let setup = Date().timeIntervalSince(startedAt)
            _ = await fleet.harvest() // set-up traffic is not measured
            let recorder = RunRecorder(fleet: fleet, serverPid: serverPid)
            await run.play(recorder: recorder)
            await drain(recorder)
            recorder.finishLine()
            let audit = await run.audit()
            await run.closeAll()
            var total = recorder.total
            total.violations.undelivered = audit.undelivered
            total.violations.redelivered = audit.redelivered
            total.violations.unwanted = audit.unwanted
            var extra = run.figures(audit)
            extra["usersPresentPeak"] = Double(recorder.timeline.map(\.connections).max() ?? 0)
            return report(recorder, total: total, opened: run.users.count, wanted: scenario.peakConnections - 1, setup: setup, extra: extra)
        case .echo:
            let run = EchoRun(scenario: scenario, fleet: fleet)
            let (opened, failures) = await run.start()
            guard opened > 0 else { throw LoadError("no connection could be opened: \(failures)") }
            let setup = Date().timeIntervalSince(startedAt)
            let recorder = RunRecorder(fleet: fleet, serverPid: serverPid)
            await run.play(recorder: recorder)
            recorder.finishLine()
            return report(recorder, opened: opened, wanted: scenario.echo!.connections, failures: failures, setup: setup)
        case .fanout:
            let run = FanoutRun(scenario: scenario, fleet: fleet)
            let (opened, failures) = await run.start()
            guard opened > 0 else { throw LoadError("no connection could be opened: \(failures)") }
            let setup = Date().timeIntervalSince(startedAt)
            let recorder = RunRecorder(fleet: fleet, serverPid: serverPid)
            await run.play(recorder: recorder)
            await drain(recorder)
            run.stop()
            recorder.finishLine()
            var total = recorder.total
            total.violations.missing = run.missingDeliveries(received: total.received, duplicates: total.violations.duplicates)
            return report(recorder, total: total, opened: opened, wanted: scenario.peakConnections, failures: failures, setup: setup,
                          extra: ["published": Double(run.published.load(ordering: .relaxed)),
                                  "subscribers": Double(scenario.fanout!.subscribers)])
        }
    }

    /// Keeps collecting while the last pushes arrive.
    private func drain(_ recorder: RunRecorder) async {
        var left = scenario.drainSeconds
        while left > 0 {
            let step = min(1, left)
            try? await Task.sleep(nanoseconds: UInt64(step * 1e9))
            left -= step
            await recorder.record(extraStatus: " (draining)")
        }
    }
}
