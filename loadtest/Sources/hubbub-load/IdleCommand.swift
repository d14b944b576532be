import ArgumentParser
import Foundation
import HubbubClient
import LoadHarness
import Transport
import WebSocket

/// `idle`: opens C connections and holds them, to measure the server's memory per idle
/// connection (with --server-pid, its RSS is read from /proc before and after).
struct IdleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "idle", abstract: "Hold idle connections; server RSS per connection.")

    @Option(help: "Endpoint (ws:// or wss://).") var url = "ws://127.0.0.1:8080/echo"
    @Option(name: .shortAndLong, help: "Connections.") var connections = 10_000
    @Option(help: "Seconds to hold them once all are open.") var hold = 5.0
    @Option(help: "Client event loops (threads).") var loops = 1
    @Flag(help: "Offer permessage-deflate.") var compression = false
    @Option(help: "The server's pid, to read its RSS from /proc.") var serverPid: Int?
    @Option(help: "Spread connections over this many source addresses 127.0.0.1..N (ports run out near 28,000 per address).")
    var sourceAddresses = 1
    @Option(help: "Connections opened at once while connecting.") var connectConcurrency = 500
    @Option(help: "Write the JSON result here too.") var json: String?

    func run() async throws {
        _ = raiseFileLimit(for: connections)
        let target = try ClientURL(url)
        var tls: TLSContext?
        if target.secure { tls = try TLSContext.client(verify: false) }
        var config = TransportConfiguration()
        config.maxOutboundBytes = 1 << 30
        let eventLoops = try (0..<loops).map { try EventLoop.makeClientLoop(index: $0, configuration: config) }
        let before = serverPid.flatMap { rssKB(of: $0) }
        let sources = sourceAddresses
        let tlsContext = tls
        let (opened, failures) = await openConnections(
            count: connections, loops: eventLoops, concurrency: connectConcurrency,
            options: { i in
                var options = ClientOptions(host: target.host, port: target.port, path: target.path, tls: tlsContext,
                                            offerDeflate: compression)
                if sources > 1 { options.sourceAddress = "127.0.0.\(1 + i % sources)" }
                return options
            },
            makeHandler: { _ in IgnoringHandler() })
        try await Task.sleep(nanoseconds: UInt64(hold * 1e9))
        let after = serverPid.flatMap { rssKB(of: $0) }
        var object: [String: Any] = ["mode": "idle", "url": url, "connections": opened, "failed": failures.values.reduce(0, +),
                                     "compression": compression]
        if let before, let after, opened > 0 {
            object["rss_before_kb"] = before
            object["rss_after_kb"] = after
            object["kb_per_conn"] = (Double(after - before) / Double(opened) * 100).rounded() / 100
        }
        if !failures.isEmpty { object["errors"] = failures }
        for loop in eventLoops { loop.shutdownClientLoop() }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        let line = String(decoding: data, as: UTF8.self)
        print(line)
        if let json { try (line + "\n").write(toFile: json, atomically: true, encoding: .utf8) }
    }
}

/// Drops whatever arrives (idle clients).
final class IgnoringHandler: WebSocketHandler {
    func onMessage(_ message: Message, connection: WebSocketConnection) {}
}
