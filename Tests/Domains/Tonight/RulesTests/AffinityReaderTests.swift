import Tonight
import XCTest

/// The affinity feed in the seed's exact text shape, at every split of its bytes.
final class AffinityReaderTests: XCTestCase {
    static let feed = """
        Recommended artists for Battle At the Boat
        859485,Showtime Boxing,0.1032054610951779
        900333,Guns N Hoses Charity Boxing Event,0.06409555004458115
        -----
        Recommended artists for Crosby, Stills, Nash & Young
        12,Simon & Garfunkel, the reunion,9.6e-05
        13,Bad Score,1.7
        14,No Score
        ,No ID,0.5
        -----
        stray line
        Recommended artists for Björk\r
        15,Sigur Rós,0.9\r
        """

    private func read(_ text: String, pieces: Int = 1) -> ([AffinityBlock], [FeedReject]) {
        var reader = AffinityReader()
        var blocks: [AffinityBlock] = [], rejects: [FeedReject] = []
        let bytes = Array(text.utf8)
        let size = max(1, bytes.count / pieces)
        for start in stride(from: 0, to: bytes.count, by: size) {
            bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { reader.feed($0, onBlock: { blocks.append($0) }, onReject: { rejects.append($0) }) }
        }
        reader.finish(onBlock: { blocks.append($0) }, onReject: { rejects.append($0) })
        return (blocks, rejects)
    }

    func testBlocksNamesWithCommasAndBadLines() {
        let (blocks, rejects) = read(Self.feed)
        XCTAssertEqual(blocks.map(\.header), ["Battle At the Boat", "Crosby, Stills, Nash & Young", "Björk"])
        XCTAssertEqual(blocks[0].recommendations.map(\.artist), ["859485", "900333"])
        XCTAssertEqual(blocks[0].recommendations[1].name, "Guns N Hoses Charity Boxing Event")
        XCTAssertEqual(blocks[1].recommendations, [.init(artist: "12", name: "Simon & Garfunkel, the reunion", score: 9.6e-05, line: 6)],
                       "the ID is the first field, the score the last; Python's exponent form is a number")
        XCTAssertEqual(blocks[2].recommendations.first?.name, "Sigur Rós", "CRLF line ends")
        XCTAssertEqual(blocks[2].line, 12)
        XCTAssertEqual(rejects.map(\.line), [7, 8, 9, 11])
        XCTAssertTrue(rejects[0].reason.contains("1.7"))
        XCTAssertTrue(rejects[3].reason.contains("Recommended artists for"))
    }

    func testEverySplitReadsTheSame() {
        let (whole, wholeRejects) = read(Self.feed)
        for pieces in [2, 5, 17, Self.feed.utf8.count] {
            let (blocks, rejects) = read(Self.feed, pieces: pieces)
            XCTAssertEqual(blocks, whole, "\(pieces) pieces")
            XCTAssertEqual(rejects, wholeRejects, "\(pieces) pieces")
        }
    }

    func testOverlongLinesAreRefusedWhole() {
        var reader = AffinityReader(maxLineBytes: 50)
        var rejects: [FeedReject] = [], blocks: [AffinityBlock] = []
        let text = "Recommended artists for A\n1," + String(repeating: "x", count: 200) + ",0.5\n2,B,0.25\n-----\n"
        Array(text.utf8).withUnsafeBytes { reader.feed($0, onBlock: { blocks.append($0) }, onReject: { rejects.append($0) }) }
        reader.finish(onBlock: { blocks.append($0) }, onReject: { rejects.append($0) })
        XCTAssertEqual(rejects.map(\.line), [2])
        XCTAssertEqual(blocks.first?.recommendations.map(\.artist), ["2"])
    }

    func testNameKeysIgnoreCaseAndAccents() {
        XCTAssertEqual(NameKey.of("BJÖRK"), NameKey.of(" björk "))
        XCTAssertEqual(NameKey.of("Bjork"), NameKey.of("Björk"))
        XCTAssertEqual(NameKey.of("Motörhead"), NameKey.of("MOTORHEAD"))
        XCTAssertNotEqual(NameKey.of("Sigur Rós"), NameKey.of("Sigur Ros 2"))
    }
}
