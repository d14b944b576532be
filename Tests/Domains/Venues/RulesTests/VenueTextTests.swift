import Venues
import XCTest

final class VenueTextTests: XCTestCase {
    func testCaseAndAccentsFold() {
        XCTAssertEqual(VenueText.normalized("Café Åland Straße"), "cafe aland strasse")
        XCTAssertEqual(VenueText.normalized("Café Åland Straße"), VenueText.normalized("cafe aland strasse"))
        XCTAssertEqual(VenueText.normalized("CAFÉ"), "cafe")
    }

    func testDecomposedCombiningMarksAreStripped() {
        XCTAssertEqual(VenueText.normalized("Cafe\u{301} A\u{30A}land"), "cafe aland")
        XCTAssertEqual(VenueText.normalized("n\u{303}u\u{308}"), "nu")
    }

    func testLigaturesAndLettersWithoutDecomposition() {
        XCTAssertEqual(VenueText.normalized("Æbeltoft Øresund Łódź Œuvre Þingvellir Đakovo İstanbul Ærø"),
                       "aebeltoft oresund lodz oeuvre thingvellir dakovo istanbul aero")
        XCTAssertEqual(VenueText.normalized("Bucureşti București Kraków Ĳmuiden"), "bucuresti bucuresti krakow ijmuiden")
    }

    func testEveryLetterOfLatin1SupplementAndExtendedAFoldsToAscii() {
        for v in 0xC0...0x17F {
            let scalar = Unicode.Scalar(v)!
            guard scalar.properties.isAlphabetic else { continue }
            let folded = VenueText.normalized(String(Character(scalar)))
            XCTAssertFalse(folded.isEmpty, "U+\(String(v, radix: 16))")
            XCTAssertTrue(folded.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isLowercase },
                          "U+\(String(v, radix: 16)) \(scalar) → \(folded)")
        }
    }

    func testWhiteSpaceAndApostrophes() {
        XCTAssertEqual(VenueText.normalized("  The   Dog’s \t Head\n"), "the dog's head")
        XCTAssertEqual(VenueText.normalized(""), "")
    }

    func testOtherScriptsPassThroughLowercased() {
        XCTAssertEqual(VenueText.normalized("Москва ΑΘΗΝΑ 東京"), "москва αθηνα 東京")
    }

    func testMatches() {
        XCTAssertTrue(VenueText.matches("Café Åland, Große Straße 5", query: "grosse STRASSE"))
        XCTAssertTrue(VenueText.matches("Bar Łódź", query: "lodz"))
        XCTAssertFalse(VenueText.matches("Brasserie", query: "strasse"))
        XCTAssertTrue(VenueText.matches("anything", query: "  "))
    }
}
