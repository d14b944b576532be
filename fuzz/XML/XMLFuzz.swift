// libFuzzer target for tonight's feeds (POST /api/feeds/events and /api/feeds/affinity):
// `StreamingXMLParser` (libxml2's push parser) alone and with `EventFeedReader`, and
// `AffinityReader`: .build-fuzz/fuzz-xml. Bodies arrive in pieces of any size.
//
// Input: [mode][limits][cut seed][text pattern] then the document. Mode % 3 picks the target;
// a limits byte with its top bit set makes small limits (else the defaults); the pattern says
// after which events the recording handler wants text.
//
// Invariants:
// - whatever the pieces the bytes come in, the document is refused or not alike, and the same
//   elements (names, attributes, lines, text), records and rejects come out, up to the error in
//   a refused one (met after more or fewer of them depending on the pieces);
// - no element deeper than `maxDepth`, with more than `maxAttributes` attributes or more than
//   `maxTextBytes` of text reaches a handler; a handler that did not want text gets none;
// - the feed reader's records are what feeds.md says a record is (ids and names present and
//   trimmed, coordinates in range and paired, prices in order, three-letter currencies, dates
//   that print back as themselves);
// - affinity blocks hold trimmed names and ids, scores from 0 to 1, lines in order; an ASCII
//   name's key is the same by the fast path as by Foundation's folding;
// - no hang (libFuzzer's -timeout): a DTD, hence any entity expansion, is refused.

import Foundation
import StreamingXML
import Tonight

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = Input(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    let mode = input.byte(), limitsByte = input.byte(), cutSeed = input.byte(), pattern = input.byte()
    let text = input.rest
    switch mode % 3 {
    case 0:
        var limits = StreamingXMLParser.Limits()
        if limitsByte & 0x80 != 0 {
            limits.maxDepth = 1 + Int(limitsByte & 7)
            limits.maxTextBytes = 1 + Int(limitsByte >> 3 & 0xF) * 5
            limits.maxAttributes = Int(limitsByte & 3)
        }
        let whole = parse([text[...]], limits: limits, pattern: pattern)
        let split = parse(pieces(text, seed: cutSeed), limits: limits, pattern: pattern)
        check(whole.accepted == split.accepted, "split feed accepted: \(split.accepted), whole: \(whole.accepted)")
        check(sameUpToRefusal(whole.events, split.events, accepted: whole.accepted), "split feed gives other elements")
    case 1:
        let whole = readEventFeed([text[...]])
        let split = readEventFeed(pieces(text, seed: cutSeed))
        check(whole.accepted == split.accepted, "split feed accepted: \(split.accepted), whole: \(whole.accepted)")
        check(sameUpToRefusal(whole.records, split.records, accepted: whole.accepted)
                  && sameUpToRefusal(whole.lines, split.lines, accepted: whole.accepted)
                  && sameUpToRefusal(whole.rejects, split.rejects, accepted: whole.accepted), "split feed gives other records or rejects")
        checkRecords(whole)
        checkRecords(split)
    default:
        let maxLine = limitsByte & 0x80 != 0 ? 1 + Int(limitsByte & 0x3F) : 4096
        let whole = readAffinity([text[...]], maxLine: maxLine)
        let split = readAffinity(pieces(text, seed: cutSeed), maxLine: maxLine)
        check(whole.blocks == split.blocks && whole.rejects == split.rejects, "split affinity feed reads differently")
        checkAffinity(whole)
    }
    return 0
}

/// The same, or, for a refused document, the same as far as the shorter goes: libxml2 stops at an
/// error once it has read and converted the bytes holding it, which it does a piece at a time (a
/// whole body declared in an encoding it cannot convert fails before its first element; the same
/// body in pieces, after the elements of the pieces before the bad bytes).
func sameUpToRefusal<T: Equatable>(_ a: [T], _ b: [T], accepted: Bool) -> Bool {
    accepted ? a == b : (a.count <= b.count ? b.starts(with: a) : a.starts(with: b))
}

// MARK: The streamed parser

/// Writes down every element a parser reports, checking the limits as it goes.
final class Recorder: XMLElementHandler {
    let limits: StreamingXMLParser.Limits
    let pattern: UInt8
    var events: [String] = []
    var depth = 0
    /// What `wantsText` last answered (the parser asks after every start and end).
    var wanted = true

    init(limits: StreamingXMLParser.Limits, pattern: UInt8) {
        self.limits = limits
        self.pattern = pattern
    }

    func start(_ name: String, attributes: XMLAttributes, line: Int) {
        depth += 1
        check(depth <= limits.maxDepth, "an element at depth \(depth), limit \(limits.maxDepth)")
        check(attributes.count <= limits.maxAttributes, "\(attributes.count) attributes, limit \(limits.maxAttributes)")
        let all = attributes.all
        check((attributes["ID"] == nil) == (all["ID"] == nil), "ID found by name but not in every attribute, or the reverse")
        events.append("<\(name) \(all.sorted { $0.key < $1.key }) line \(line)")
    }

    func end(_ name: String, text: XMLText) {
        depth -= 1
        check(text.count <= limits.maxTextBytes, "\(text.count) bytes of text, limit \(limits.maxTextBytes)")
        check(wanted || text.isEmpty, "text handed to a handler that did not want it")
        events.append("</\(name) \(Array(text.string.utf8))")
    }

    var wantsText: Bool {
        wanted = pattern >> (events.count % 8) & 1 == 0
        return wanted
    }
}

func parse(_ pieces: [ArraySlice<UInt8>], limits: StreamingXMLParser.Limits, pattern: UInt8) -> (events: [String], accepted: Bool) {
    let recorder = Recorder(limits: limits, pattern: pattern)
    let accepted = feed(pieces, to: StreamingXMLParser(handler: recorder, limits: limits))
    return (recorder.events, accepted)
}

/// Feeds `pieces` to `parser` then finishes it; whether the document was accepted.
func feed(_ pieces: [ArraySlice<UInt8>], to parser: StreamingXMLParser) -> Bool {
    do throws(StreamingXMLParser.Failure) {
        for piece in pieces {
            let failure = piece.withUnsafeBytes { bytes -> StreamingXMLParser.Failure? in
                do throws(StreamingXMLParser.Failure) { try parser.feed(bytes) } catch { return error }
                return nil
            }
            if let failure { throw failure }
        }
        try parser.finish()
        return true
    } catch {
        check(error.offset >= 0 && error.line >= 0 && !error.message.isEmpty, "failure \(error)")
        return false
    }
}

// MARK: The event feed

/// The event feed's reader as the service wires it (TonightService/FeedXML.swift): the `ID`
/// attribute, and text only for the fields a record keeps.
final class EventFeedHandler: XMLElementHandler {
    let reader: EventFeedReader
    init(_ reader: EventFeedReader) { self.reader = reader }
    func start(_ name: String, attributes: XMLAttributes, line: Int) { reader.start(name, id: attributes["ID"], line: line) }
    func end(_ name: String, text: XMLText) { reader.end(name, text: { text.string }) }
    var wantsText: Bool { reader.wantsText }
}

struct FeedRead {
    var records: [FeedRecord] = []
    var lines: [Int] = []
    var rejects: [FeedReject] = []
    var accepted = false
}

func readEventFeed(_ pieces: [ArraySlice<UInt8>]) -> FeedRead {
    var out = FeedRead()
    let reader = EventFeedReader(onRecord: { out.records.append($0); out.lines.append($1) }, onReject: { out.rejects.append($0) })
    let handler = EventFeedHandler(reader)
    out.accepted = feed(pieces, to: StreamingXMLParser(handler: handler))
    return out
}

func isTrimmed(_ s: String) -> Bool {
    !s.isEmpty && ![" ", "\t", "\n", "\r"].contains(s.unicodeScalars.first!) && ![" ", "\t", "\n", "\r"].contains(s.unicodeScalars.last!)
}

func checkRecords(_ read: FeedRead) {
    check(read.lines.allSatisfy { $0 >= 1 } && read.rejects.allSatisfy { $0.line >= 1 && !$0.reason.isEmpty }, "a record or reject without its line")
    for record in read.records {
        check(isTrimmed(record.id), "record id \(record.id.debugDescription)")
        switch record {
        case .category(let c):
            check(isTrimmed(c.name) && c.parent.map(isTrimmed) ?? true, "category \(c)")
        case .artist(let a):
            check(isTrimmed(a.name) && a.categories.allSatisfy(isTrimmed), "artist \(a)")
        case .venue(let v):
            check(isTrimmed(v.name), "venue name \(v.name.debugDescription)")
            check((v.latitude == nil) == (v.longitude == nil), "venue \(v.id) with one coordinate")
            if let lat = v.latitude, let lon = v.longitude {
                check(lat.isFinite && abs(lat) <= 90 && lon.isFinite && abs(lon) <= 180, "venue \(v.id) at \(lat), \(lon)")
            }
        case .event(let e):
            check(isTrimmed(e.venue) && !e.performers.isEmpty && e.performers.allSatisfy(isTrimmed), "event \(e.id) venue or performers")
            check(LocalDateTime(iso: e.start.description) == e.start, "event \(e.id) starts at \(e.start), which reads back otherwise")
            if let min = e.minPrice, let max = e.maxPrice { check(min <= max, "event \(e.id) prices \(min) > \(max)") }
            check((e.minPrice ?? 0) >= 0 && (e.maxPrice ?? 0) >= 0, "event \(e.id) with a negative price")
            if let c = e.currency { check(c.utf8.count == 3 && c.utf8.allSatisfy { (0x41...0x5A).contains($0) }, "currency \(c)") }
        }
    }
}

// MARK: The affinity feed

struct AffinityRead {
    var blocks: [AffinityBlock] = []
    var rejects: [FeedReject] = []
}

func readAffinity(_ pieces: [ArraySlice<UInt8>], maxLine: Int) -> AffinityRead {
    var out = AffinityRead()
    var reader = AffinityReader(maxLineBytes: maxLine)
    for piece in pieces {
        piece.withUnsafeBytes { reader.feed($0, onBlock: { out.blocks.append($0) }, onReject: { out.rejects.append($0) }) }
    }
    reader.finish(onBlock: { out.blocks.append($0) }, onReject: { out.rejects.append($0) })
    return out
}

func checkAffinity(_ read: AffinityRead) {
    var lastLine = 0
    for block in read.blocks {
        // Spaces and tabs around a name are layout; any other character (a lone CR) is the name's.
        check(!block.header.isEmpty && block.header == block.header.trimmingCharacters(in: .whitespaces), "header \(block.header.debugDescription)")
        check(block.line > lastLine, "block on line \(block.line) after line \(lastLine)")
        lastLine = block.line
        for r in block.recommendations {
            check(!r.artist.isEmpty && r.artist == r.artist.trimmingCharacters(in: .whitespaces) && r.name == r.name.trimmingCharacters(in: .whitespaces),
                  "recommendation \(r)")
            check(r.score.isFinite && (0...1).contains(r.score), "recommendation \(r)")
            check(r.line > lastLine, "recommendation on line \(r.line) after line \(lastLine)")
            lastLine = r.line
        }
        checkNameKey(block.header)
    }
    check(zip(read.rejects, read.rejects.dropFirst()).allSatisfy { $0.line < $1.line }, "rejects out of line order")
}

/// The ASCII fast path of `NameKey.of` gives what Foundation's folding gives.
func checkNameKey(_ name: String) {
    guard name.utf8.allSatisfy({ $0 < 0x80 }) else { return }
    let folded = name.trimmingCharacters(in: .whitespacesAndNewlines)
        .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    check(NameKey.of(name) == folded, "key of \(name.debugDescription): \(NameKey.of(name).debugDescription), Foundation folds \(folded.debugDescription)")
}
