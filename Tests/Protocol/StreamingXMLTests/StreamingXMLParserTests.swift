import StreamingXML
import XCTest

/// Records what the parser reports, as lines: "+Name a=1 b=2", "-Name text".
final class Recorder: XMLElementHandler {
    var events: [String] = []
    func start(_ name: String, attributes: XMLAttributes, line: Int) {
        events.append((["+" + name] + attributes.all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " "))
    }
    func end(_ name: String, text: XMLText) { events.append("-\(name) \(text.string)") }
}

final class StreamingXMLParserTests: XCTestCase {
    static let feed = """
        <?xml version="1.0" encoding="UTF-8"?>
        <EventFeed>
          <Artist ID="707496">
            <ArtistCategory ID="10" />
            <ArtistName>Beyoncé &amp; Björk</ArtistName>
            <ArtistURL><![CDATA[http://tickets.example.com/a?x=1&y=<2>]]></ArtistURL>
          </Artist>
          <!-- a comment -->
          <Venue ID="4471"><VenueName>Caf&#233; Sigur Rós</VenueName><VenueLatitude>37.7755</VenueLatitude></Venue>
        </EventFeed>
        """

    private func parse(_ text: String, limits: StreamingXMLParser.Limits = .init(), pieces: Int? = nil) -> (Recorder, StreamingXMLParser.Failure?) {
        let recorder = Recorder()
        let parser = StreamingXMLParser(handler: recorder, limits: limits)
        let bytes = Array(text.utf8)
        let size = max(1, pieces.map { bytes.count / $0 } ?? bytes.count)
        do {
            for start in stride(from: 0, to: bytes.count, by: size) {
                try bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { try parser.feed($0) }
            }
            try parser.finish()
            return (recorder, nil)
        } catch let failure as StreamingXMLParser.Failure {
            return (recorder, failure)
        } catch {
            XCTFail("unexpected \(error)")
            return (recorder, nil)
        }
    }

    func testElementsAttributesTextCDATAAndReferences() {
        let (r, failure) = parse(Self.feed)
        XCTAssertNil(failure)
        XCTAssertEqual(r.events.filter { $0.hasPrefix("+") }, ["+EventFeed", "+Artist ID=707496", "+ArtistCategory ID=10", "+ArtistName", "+ArtistURL",
                                                               "+Venue ID=4471", "+VenueName", "+VenueLatitude"])
        XCTAssertTrue(r.events.contains("-ArtistName Beyoncé & Björk"))
        XCTAssertTrue(r.events.contains("-ArtistURL http://tickets.example.com/a?x=1&y=<2>"), "CDATA arrives as text")
        XCTAssertTrue(r.events.contains("-VenueName Café Sigur Rós"), "character references are decoded")
        XCTAssertTrue(r.events.contains("-VenueLatitude 37.7755"))
    }

    /// The same events whatever the pieces the body arrives in, down to one byte at a time.
    func testEveryByteSplitGivesTheSameEvents() {
        let (whole, _) = parse(Self.feed)
        for pieces in [2, 3, 7, 64, Self.feed.utf8.count] {
            let (split, failure) = parse(Self.feed, pieces: pieces)
            XCTAssertNil(failure, "\(pieces) pieces")
            XCTAssertEqual(split.events, whole.events, "\(pieces) pieces")
        }
    }

    /// The text is UTF-8 whatever the document declares: a declared encoding that libxml2 would
    /// convert (UTF-7 reads differently depending on where the pieces are cut) is ignored, and bytes
    /// that are not UTF-8 (a Latin-1 é) are refused, whole or split alike.
    func testTheDeclaredEncodingIsIgnoredAndTheTextIsUTF8() {
        let utf7 = Self.feed.replacingOccurrences(of: "encoding=\"UTF-8\"", with: "encoding=\"UTF-7\"")
        let (reference, _) = parse(Self.feed)
        for pieces in [nil, 3, 64] {
            let (read, failure) = parse(utf7, pieces: pieces)
            XCTAssertNil(failure, "\(String(describing: pieces)) pieces")
            XCTAssertEqual(read.events, reference.events, "read as UTF-8, \(String(describing: pieces)) pieces")
        }
        let latin1 = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf".utf8) + [0xE9] + Array("</a>".utf8)
        for pieces in [1, 2, latin1.count] {
            let recorder = Recorder(), parser = StreamingXMLParser(handler: recorder)
            let size = max(1, latin1.count / pieces)
            var failed = false
            do {
                for start in stride(from: 0, to: latin1.count, by: size) {
                    try latin1[start..<min(start + size, latin1.count)].withUnsafeBytes { try parser.feed($0) }
                }
                try parser.finish()
            } catch {
                failed = true
            }
            XCTAssertTrue(failed, "a byte that is not UTF-8 is refused (\(pieces) pieces)")
            XCTAssertFalse(recorder.events.contains { $0.hasPrefix("-a") }, "and never reaches a handler")
        }
    }

    func testBillionLaughsIsRefusedBeforeAnyExpansion() {
        var doc = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        for i in 1...9 { doc += "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i - 1 == 0 ? "" : String(i - 1));", count: 10) + "\">\n" }
        doc += "]>\n<lolz>&lol9;</lolz>"
        let started = ContinuousClock.now
        let (r, failure) = parse(doc)
        XCTAssertTrue(failure?.message.contains("DTD") ?? false, "\(String(describing: failure))")
        XCTAssertEqual(failure?.line, 2)
        XCTAssertTrue(r.events.isEmpty, "nothing of the document was reported")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1))
    }

    func testExternalEntitiesAreNeverRead() {
        let doc = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY secret SYSTEM \"file:///etc/passwd\">]><x>&secret;</x>"
        let (r, failure) = parse(doc)
        XCTAssertNotNil(failure)
        XCTAssertFalse(r.events.joined().contains("root:"), "no file content reached the handler")
        // Without a DTD an entity is simply undefined: an error, not a lookup.
        let (_, undefined) = parse("<x>&secret;</x>")
        XCTAssertTrue(undefined?.message.contains("secret") ?? false, "\(String(describing: undefined))")
    }

    func testDeepNestingStopsAtTheLimit() {
        let doc = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        let (r, failure) = parse(doc)
        XCTAssertTrue(failure?.message.contains("nested deeper than 32") ?? false, "\(String(describing: failure))")
        XCTAssertEqual(r.events.count, 32, "it stopped at the limit")
    }

    func testLongTextStopsAtTheLimit() {
        var limits = StreamingXMLParser.Limits()
        limits.maxTextBytes = 1000
        let (_, failure) = parse("<a>" + String(repeating: "x", count: 5000) + "</a>", limits: limits)
        XCTAssertTrue(failure?.message.contains("1000 bytes of text") ?? false, "\(String(describing: failure))")
    }

    func testTextAHandlerDoesNotWantIsNotKeptYetCountsAgainstTheLimit() {
        /// Wants only the text of `Name` elements.
        final class Picky: XMLElementHandler {
            var texts: [String] = []
            private var inName = false
            var wantsText: Bool { inName }
            func start(_ name: String, attributes: XMLAttributes, line: Int) { inName = name == "Name" }
            func end(_ name: String, text: XMLText) {
                texts.append("\(name)=\(text.string)")
                inName = false
            }
        }
        let picky = Picky()
        let parser = StreamingXMLParser(handler: picky)
        let doc = "<R><Notes>\(String(repeating: "x", count: 500))</Notes><Name>Björk</Name></R>"
        XCTAssertNoThrow(try Array(doc.utf8).withUnsafeBytes { try parser.feed($0); try parser.finish() })
        XCTAssertEqual(picky.texts, ["Notes=", "Name=Björk", "R="], "skipped text is not handed over")
        var limits = StreamingXMLParser.Limits()
        limits.maxTextBytes = 100
        let strict = StreamingXMLParser(handler: Picky(), limits: limits)
        XCTAssertThrowsError(try Array(doc.utf8).withUnsafeBytes { try strict.feed($0); try strict.finish() }, "unread text still counts")
    }

    /// A body cut off is refused at its end, with the position; what came before was reported.
    func testATruncatedBodyFailsWithItsPosition() {
        let cut = String(Self.feed.prefix(200))
        let (r, failure) = parse(cut)
        XCTAssertNotNil(failure)
        XCTAssertGreaterThan(failure?.offset ?? 0, 150, "\(String(describing: failure))")
        XCTAssertTrue(r.events.contains("-ArtistName Beyoncé & Björk"), "the records before the cut were read")
    }

    func testNotXMLAtAll() {
        let (_, failure) = parse("hello, world")
        XCTAssertEqual(failure?.line, 1)
        let (_, empty) = parse("")
        XCTAssertTrue(empty?.message.contains("empty") ?? false)
        let (_, binary) = parse(String(decoding: [0xFF, 0xFE, 0x00, 0x01, 0x80] as [UInt8], as: UTF8.self))
        XCTAssertNotNil(binary)
    }
}
