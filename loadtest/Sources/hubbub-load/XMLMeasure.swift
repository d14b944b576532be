import ArgumentParser
import Foundation
import StreamingXML
import Tonight
import TonightService

/// `measure xml`: how fast the streamed XML parser reads a feed (elements, attributes and text
/// handed to a handler that keeps nothing), beside Python's `xml.etree.ElementTree.iterparse`
/// reading the same file in the same run (`scripts/bench-iterparse.py`), the seed's own tool.
struct XMLMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "xml")

    @Option(help: "The feed (e.g. made with scripts/gen-feed.py).") var file: String
    @Option(help: "Bytes per read, as a body arrives.") var read = 65_536
    @Option(help: "Python to run scripts/bench-iterparse.py with (empty: skip it).") var python = ".venv/bin/python"
    @Flag(help: "Also build and check the feed's records (EventFeedReader), and list the first rejects.") var records = false

    /// Counts what it is told, so that nothing is optimised away.
    final class Counter: XMLElementHandler {
        var elements = 0, attributes = 0, textBytes = 0
        func start(_ name: String, attributes: XMLAttributes, line: Int) {
            elements += 1
            self.attributes += attributes.count
        }
        func end(_ name: String, text: XMLText) { textBytes += text.count }
    }

    func run() throws {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ValidationError("cannot read \(file)") }
        let counter = Counter()
        var kinds: [String: Int] = [:], rejects: [FeedReject] = []
        let reader = EventFeedReader(onRecord: { record, _ in
            switch record {
            case .category: kinds["Category", default: 0] += 1
            case .artist: kinds["Artist", default: 0] += 1
            case .venue: kinds["Venue", default: 0] += 1
            case .event: kinds["Event", default: 0] += 1
            }
        }, onReject: { rejects.append($0) })
        let parser = StreamingXMLParser(handler: records ? reader : counter)
        var total = 0
        let started = ContinuousClock.now
        while let data = try handle.read(upToCount: read), !data.isEmpty {
            total += data.count
            try data.withUnsafeBytes { try parser.feed($0) }
        }
        try parser.finish()
        let d = (ContinuousClock.now - started).components
        let seconds = Double(d.seconds) + Double(d.attoseconds) / 1e18
        let mb = Double(total) / 1_048_576
        if records {
            print(String(format: "StreamingXML + EventFeedReader: %.1f MB in %.2f s, %.0f MB/s; records %@; %d rejected",
                         mb, seconds, mb / seconds, kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
                         rejects.count))
            for r in rejects.prefix(20) { print("  \(r.record), line \(r.line): \(r.reason)") }
        } else {
            print(String(format: "StreamingXML: %.1f MB in %.2f s, %.0f MB/s; %d elements, %d attributes, %d bytes of text",
                         mb, seconds, mb / seconds, counter.elements, counter.attributes, counter.textBytes))
        }
        guard !python.isEmpty else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: FileManager.default.fileExists(atPath: python) ? python : "/usr/bin/python3")
        p.arguments = ["scripts/bench-iterparse.py", file]
        try p.run()
        p.waitUntilExit()
    }
}
