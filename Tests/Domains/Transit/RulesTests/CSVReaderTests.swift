import SeededRandom
import Transit
import XCTest

/// The streaming CSV reader: RFC 4180's rules and GTFS's habits (LF or CRLF, a byte order mark,
/// empty last lines), refusals that name the line and let reading go on, the same records
/// whatever the pieces the text arrives in, and a round trip of random fields.
final class CSVReaderTests: XCTestCase {
    /// Every record and refusal of `text`, fed whole.
    func read(_ text: String, limits: CSVReader.Limits = .init()) -> [CSVReader.Event] {
        read(Array(text.utf8), pieces: [Array(text.utf8).count], limits: limits)
    }

    /// Fed in pieces of these sizes (the rest, if any, as one last piece), through both of the
    /// reader's entries (any sequence of bytes; bytes in memory, which takes runs at once): they
    /// must read the same.
    func read(_ bytes: [UInt8], pieces: [Int], limits: CSVReader.Limits = .init(),
              file: StaticString = #filePath, line: UInt = #line) -> [CSVReader.Event] {
        func run(_ feed: (inout CSVReader, ArraySlice<UInt8>) -> [CSVReader.Event]) -> [CSVReader.Event] {
            var reader = CSVReader(limits: limits)
            var out: [CSVReader.Event] = [], at = 0
            for n in pieces where at < bytes.count {
                out += feed(&reader, bytes[at..<min(bytes.count, at + n)])
                at += n
            }
            if at < bytes.count { out += feed(&reader, bytes[at...]) }
            return out + reader.finish()
        }
        let sequence = run { reader, piece in reader.feed(piece) }
        let buffered = run { reader, piece in piece.withUnsafeBytes { reader.feed($0) } }
        XCTAssertEqual(sequence, buffered, "both entries read the same", file: file, line: line)
        return sequence
    }

    func records(_ fields: [[String]], lines: [Int]) -> [CSVReader.Event] {
        zip(fields, lines).map { .record(CSVRecord($0, line: $1)) }
    }

    func testRecordsFieldsAndLineEnds() {
        XCTAssertEqual(read("stop_id,stop_name\nS1,Central\nS2,Harbour\n"),
                       records([["stop_id", "stop_name"], ["S1", "Central"], ["S2", "Harbour"]], lines: [1, 2, 3]))
        XCTAssertEqual(read("a,b\r\nc,d\r\n"), records([["a", "b"], ["c", "d"]], lines: [1, 2]), "CRLF")
        XCTAssertEqual(read("a,b\rc,d"), records([["a", "b"], ["c", "d"]], lines: [1, 2]), "a lone CR; no line end at the end")
        XCTAssertEqual(read("a\n\n\r\nb\n\n"), records([["a"], ["b"]], lines: [1, 4]), "empty lines are skipped, and counted")
        XCTAssertEqual(read("a,,c\n,\nx,\n\"\"\n"), records([["a", "", "c"], ["", ""], ["x", ""], [""]], lines: [1, 2, 3, 4]), "empty fields")
        XCTAssertEqual(read(""), [])
    }

    func testQuotedFields() {
        XCTAssertEqual(read("\"a, \"\"b\"\"\",c\n"), records([["a, \"b\"", "c"]], lines: [1]))
        XCTAssertEqual(read("id,name\n1,\"two\nlines\"\n2,\"three\r\nmore\r\nlines\"\r\n3,x\n"),
                       records([["id", "name"], ["1", "two\nlines"], ["2", "three\r\nmore\r\nlines"], ["3", "x"]], lines: [1, 2, 4, 7]),
                       "line ends inside a quoted field are kept and counted")
        XCTAssertEqual(read("\"Zürich HB\",\"Café \"\"Ösy\"\"\""), records([["Zürich HB", "Café \"Ösy\""]], lines: [1]))
    }

    func testAByteOrderMarkIsSkippedEvenSplit() {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("stop_id\nS1\n".utf8)
        for split in 0...bytes.count {
            XCTAssertEqual(read(bytes, pieces: [split]), records([["stop_id"], ["S1"]], lines: [1, 2]), "split at \(split)")
        }
        let notAMark = read([0xEF, 0xBB, 0x41, 0x0A], pieces: [1])
        guard case .record(let r)? = notAMark.first, notAMark.count == 1 else { return XCTFail("\(notAMark)") }
        XCTAssertEqual(Array(r.bytes(0)), [0xEF, 0xBB, 0x41], "the start of a mark that is not one is text")
    }

    func testRefusedRecordsNameTheirLineAndReadingGoesOn() {
        XCTAssertEqual(read("a,b\nc\"d,e\nf,g\n"),
                       [.record(CSVRecord(["a", "b"], line: 1)), .refused(line: 2, reason: "a quote inside field 1, which does not start with one"),
                        .record(CSVRecord(["f", "g"], line: 3))])
        XCTAssertEqual(read("\"a\"x,b\r\nc\r\n"),
                       [.refused(line: 1, reason: "text after the closing quote of field 1"), .record(CSVRecord(["c"], line: 2))])
        XCTAssertEqual(read("a\n\"open\nstill open"),
                       [.record(CSVRecord(["a"], line: 1)), .refused(line: 2, reason: "a quoted field is not closed before the end of the text")])
        var limits = CSVReader.Limits()
        limits.maxFieldBytes = 4
        limits.maxFields = 3
        XCTAssertEqual(read("abcd,e\nabcde,f\n1,2,3\n1,2,3,4\n1,2,3,\nok\n", limits: limits),
                       [.record(CSVRecord(["abcd", "e"], line: 1)), .refused(line: 2, reason: "field 1 is longer than 4 bytes"),
                        .record(CSVRecord(["1", "2", "3"], line: 3)), .refused(line: 4, reason: "more than 3 fields"),
                        .refused(line: 5, reason: "more than 3 fields"), .record(CSVRecord(["ok"], line: 6))])
    }

    /// A document with every case, read in every pair of piece sizes: always the same events.
    func testEverySplitReadsTheSame() {
        let text = "\u{FEFF}route_id,route_short_name,route_long_name,route_type\r\nR1,5,\"Tram, \"\"five\"\"\",0\r\n\r\nR2,,\"Night\nbus\",3\nR3\"x,1,2,3\nR4,a,b,3"
        let bytes = Array(text.utf8)
        let whole = read(bytes, pieces: [bytes.count])
        XCTAssertEqual(whole.count, 5, "the header, R1, R2, R3 refused, R4")
        for first in 1...bytes.count {
            for second in [1, 2, 3, 7] {
                XCTAssertEqual(read(bytes, pieces: [first] + Array(repeating: second, count: bytes.count)), whole, "pieces \(first), then \(second)")
            }
        }
    }

    /// Random fields (commas, quotes, line ends, accents), written as RFC 4180 says, read back.
    func testRandomFieldsRoundTrip() {
        var rng = SplitMix64(seed: 4180)
        let alphabet = Array("ab,\"\n\r é1 ")
        for _ in 0..<300 {
            let rows = (0..<Int.random(in: 1...5, using: &rng)).map { _ in
                (0..<Int.random(in: 1...6, using: &rng)).map { _ in String((0..<Int.random(in: 0...6, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }) }
            }
            var text = ""
            for row in rows {
                text += row.map { f in
                    // Quoted when it must be (and an empty one-field row must be, or it is an empty line).
                    f.utf8.contains(where: { [0x2C, 0x22, 0x0A, 0x0D].contains($0) }) || (row.count == 1 && f.isEmpty) ? "\"" + f.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : f
                }.joined(separator: ",") + (Bool.random(using: &rng) ? "\r\n" : "\n")
            }
            let bytes = Array(text.utf8)
            let got = read(bytes, pieces: [Int.random(in: 1...8, using: &rng)] + Array(repeating: Int.random(in: 1...5, using: &rng), count: bytes.count))
            XCTAssertEqual(got.map { event -> [String] in
                guard case .record(let r) = event else { return ["refused: \(event)"] }
                return r.fields
            }, rows, text.debugDescription)
        }
    }
}
