import ArgumentParser
import Foundation
import Realtime

/// `measure json`: `JSONParser`'s speed per shape of message, beside Foundation's
/// `JSONSerialization` on the same bytes in the same run (alternating, best of several runs), and
/// how its time grows when a hostile shape doubles: it must stay linear.
struct JSONMeasure: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "json")

    @Option(help: "Approximate bytes of each shape's text.") var bytes = 1 << 20
    @Option(help: "Runs per parser and shape (the best is reported).") var runs = 7
    @Option(help: "Only the shapes whose name contains this.") var shape = ""
    @Flag(help: "Fail (exit 1) when a shape is under 50 MB/s or a doubled shape costs over 3 times as much.") var check = false

    /// One kind of text: what a client might send, hostile or not.
    struct Shape {
        var name: String
        var text: [UInt8]
        /// Foundation takes duplicate keys; a shape of them would compare unequal work.
        var foundation = true
    }

    static func shapes(bytes: Int) -> [Shape] {
        func text(_ s: String) -> [UInt8] { Array(s.utf8) }
        let vote = #"{"id":1843,"op":"venue.vote","args":{"venue":"vk3j9mxq2pa","track":"spotify:track:6rqhFgbbKwnb9MLmUQDhG6"}}"#
        var typical = "["
        while typical.utf8.count < bytes { typical += vote + "," }
        typical += vote + "]"
        let track = #"{"uri":"spotify:track:6rqhFgbbKwnb9MLmUQDhG6","title":"Mr. Brightside","artist":"The Killers","durationMs":222973,"explicit":false}"#
        var playlist = #"{"id":7,"op":"venue.playlist.set","args":{"venue":"vk3j9mxq2pa","tracks":["#
        while playlist.utf8.count < bytes { playlist += track + "," }
        playlist += track + "]}}"
        let keyCount = bytes / 14
        let manyKeys = "{" + (0..<keyCount).map { "\"k\(String($0, radix: 36))\":\($0 % 10)" }.joined(separator: ",") + "}"
        var deep = "["
        while deep.utf8.count < bytes { deep += String(repeating: "[", count: 31) + "1" + String(repeating: "]", count: 31) + "," }
        deep += "0]"
        let long = "[\"" + String(repeating: "The quick brown fox jumps over the lazy dog. ", count: bytes / 45) + "\"]"
        let escapes = "[\"" + String(repeating: #"line\n\"quoted\"\tcaf\u00e9 \ud83c\udfb5 back\\slash "#, count: bytes / 52) + "\"]"
        let numbers = "[" + (0..<(bytes / 12)).map { $0 % 3 == 0 ? "\($0)" : ($0 % 3 == 1 ? "-\($0).25" : "\($0)e-3") }.joined(separator: ",") + "]"
        let strings = "[" + (0..<(bytes / 10)).map { "\"s\($0 % 1000)\"" }.joined(separator: ",") + "]"
        return [
            Shape(name: "typical requests (votes)", text: text(typical)),
            Shape(name: "a 1 MB playlist.set", text: text(playlist)),
            Shape(name: "many keys in one object", text: text(manyKeys)),
            Shape(name: "deep nesting (31 levels)", text: text(deep)),
            Shape(name: "one long string", text: text(long)),
            Shape(name: "escapes and surrogates", text: text(escapes)),
            Shape(name: "many numbers", text: text(numbers)),
            Shape(name: "many short strings", text: text(strings)),
        ]
    }

    func run() throws {
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        // The benchmark measures the parser, not the server's limits: none here.
        let limits = JSONParser.Limits(maxDepth: 64, maxKeysPerObject: .max, maxValues: .max)
        var failures: [String] = []
        print("shape | bytes | JSONParser MB/s | Foundation MB/s | ratio")
        for shape in Self.shapes(bytes: bytes) where self.shape.isEmpty || shape.name.contains(self.shape) {
            var ours = Double.infinity, theirs = Double.infinity
            let data = Data(shape.text)
            for _ in 0..<runs {
                let a = ContinuousClock.now
                let parsed = try JSONParser.parse(shape.text, limits: limits)
                ours = min(ours, seconds(ContinuousClock.now - a))
                withExtendedLifetime(parsed) {}
                let b = ContinuousClock.now
                let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                theirs = min(theirs, seconds(ContinuousClock.now - b))
                withExtendedLifetime(object) {}
            }
            let mb = Double(shape.text.count) / 1_048_576
            print(String(format: "%@ | %d | %.0f | %.0f | %.2f×", shape.name, shape.text.count, mb / ours, mb / theirs, theirs / ours))
            if mb / ours < 50 { failures.append("\(shape.name): \(Int(mb / ours)) MB/s") }
        }
        // Linearity: the hostile shapes at twice the size cost about twice the time.
        for (name, make) in [("many keys", { (n: Int) in "{" + (0..<n).map { "\"k\($0)\":1" }.joined(separator: ",") + "}" }),
                             ("many values", { (n: Int) in "[" + (0..<n).map { _ in "[]" }.joined(separator: ",") + "]" })] {
            var times: [Double] = []
            for n in [bytes / 16, bytes / 8] {
                let text = Array(make(n).utf8)
                var best = Double.infinity
                for _ in 0..<runs {
                    let a = ContinuousClock.now
                    _ = try JSONParser.parse(text, limits: limits)
                    best = min(best, seconds(ContinuousClock.now - a))
                }
                times.append(best)
            }
            let growth = times[1] / times[0]
            print(String(format: "%@: twice the entries cost %.2f× the time", name, growth))
            if growth > 3 { failures.append("\(name) grows \(growth)× for twice the size") }
        }
        if check && !failures.isEmpty { throw ValidationError("too slow: " + failures.joined(separator: "; ")) }
    }
}
