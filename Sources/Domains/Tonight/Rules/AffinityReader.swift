import Foundation

/// One artist's recommendations in the affinity feed (feeds.md): the header's artist name, as
/// written, and the recommended artists that parsed.
public struct AffinityBlock: Sendable, Equatable {
    public struct Recommendation: Sendable, Equatable {
        public var artist: String
        public var name: String
        public var score: Double
        public var line: Int

        public init(artist: String, name: String, score: Double, line: Int) {
            self.artist = artist
            self.name = name
            self.score = score
            self.line = line
        }
    }

    /// The name after "Recommended artists for ", to resolve to an artist.
    public var header: String
    public var line: Int
    public var recommendations: [Recommendation]
}

/// The affinity feed, read as it arrives (any split of the bytes): a header line
/// `Recommended artists for NAME`, lines `RecArtistID,RecArtistName,Score` (the name may hold
/// commas: the ID is the first field, the score the last), then a line of dashes. Each block is
/// handed over when its dashes come; a bad line is refused with its number and the reading goes on.
/// Pure: bytes in, blocks and rejects out.
public struct AffinityReader {
    public static let headerPrefix = "Recommended artists for "

    /// Longest line taken (longer ones are refused whole).
    public let maxLineBytes: Int
    private var line: [UInt8] = []
    private var lineNumber = 0
    private var overlong = false
    private var block: AffinityBlock?

    public init(maxLineBytes: Int = 4096) { self.maxLineBytes = maxLineBytes }

    /// Reads the next piece of the feed.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, onBlock: (AffinityBlock) -> Void, onReject: (FeedReject) -> Void) {
        var start = 0
        while start < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[start...])
            if let newline = rest.firstIndex(of: 0x0A) {
                append(UnsafeRawBufferPointer(rebasing: rest[..<newline]))
                endLine(onBlock: onBlock, onReject: onReject)
                start += newline - rest.startIndex + 1
            } else {
                append(rest)
                break
            }
        }
    }

    /// The feed is complete: a last line without a newline is read, and a block missing its dashes is kept.
    public mutating func finish(onBlock: (AffinityBlock) -> Void, onReject: (FeedReject) -> Void) {
        if !line.isEmpty || overlong { endLine(onBlock: onBlock, onReject: onReject) }
        if let block {
            onBlock(block)
            self.block = nil
        }
    }

    private mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !overlong else { return }
        if line.count + bytes.count > maxLineBytes {
            overlong = true
            line.removeAll(keepingCapacity: true)
        } else {
            line.append(contentsOf: bytes)
        }
    }

    private mutating func endLine(onBlock: (AffinityBlock) -> Void, onReject: (FeedReject) -> Void) {
        lineNumber += 1
        defer {
            line.removeAll(keepingCapacity: true)
            overlong = false
        }
        func reject(_ reason: String) { onReject(FeedReject(record: "line \(lineNumber)", line: lineNumber, reason: reason)) }
        if overlong { return reject("longer than \(maxLineBytes) bytes") }
        if line.last == 0x0D { line.removeLast() }
        let text = String(decoding: line, as: UTF8.self)
        if text.allSatisfy(\.isWhitespace) { return }
        if text.count >= 3, text.allSatisfy({ $0 == "-" }) {
            guard let block else { return reject("a line of dashes with no header before it") }
            onBlock(block)
            self.block = nil
            return
        }
        if text.hasPrefix(Self.headerPrefix) {
            if let block { onBlock(block) } // its dashes were missing: the next header ends it
            let name = text.dropFirst(Self.headerPrefix.count).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else {
                block = nil
                return reject("a header with no artist name")
            }
            block = AffinityBlock(header: name, line: lineNumber, recommendations: [])
            return
        }
        guard block != nil else { return reject("expected \"\(Self.headerPrefix)NAME\"") }
        guard let first = text.firstIndex(of: ","), let last = text.lastIndex(of: ","), first < last else {
            return reject("expected RecArtistID,RecArtistName,Score")
        }
        let id = text[..<first].trimmingCharacters(in: .whitespaces)
        let name = text[text.index(after: first)..<last].trimmingCharacters(in: .whitespaces)
        let scoreText = text[text.index(after: last)...].trimmingCharacters(in: .whitespaces)
        guard !id.isEmpty else { return reject("no RecArtistID") }
        guard let score = Double(scoreText), score.isFinite, (0...1).contains(score) else {
            return reject("score \(scoreText) is not a number from 0 to 1")
        }
        block!.recommendations.append(.init(artist: id, name: name, score: score, line: lineNumber))
    }
}

/// How artist names are compared (affinity headers, `artist.search`): case and accents do not
/// count, nor do spaces at the ends (`BJÖRK`, `björk` and `Bjork` are one key).
public enum NameKey {
    public static func of(_ name: String) -> String {
        // Most names are ASCII: lower-cased and trimmed by hand, as Foundation's folding would
        // (which costs microseconds a name, and a feed has 20,000 artists).
        let utf8 = name.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) {
            func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }
            guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else { return "" }
            return String(decoding: utf8[first...last].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
            .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }
}
