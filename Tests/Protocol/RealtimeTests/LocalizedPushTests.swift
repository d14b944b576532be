import Realtime
import WebSocket
import XCTest

/// Pushes whose text depends on the reader's language: each member gets the version its language
/// picks, recovery replays the same version. (That each version is encoded once is the writer's:
/// RoomWriterTests.)
final class LocalizedPushTests: XCTestCase {
    private func text(_ m: OutboundMessage) -> String { String(decoding: m.payload, as: UTF8.self) }

    func testEachMemberGetsTheVersionOfItsLanguage() {
        var room = Room(name: "route:c1", epoch: "e")
        let sink = RecordingSink()
        let finn = TestMember(id: 1, batch: 0), finnToo = TestMember(id: 2, batch: 0), turk = TestMember(id: 3, batch: 0)
        let plain = TestMember(id: 4, batch: 0), german = TestMember(id: 5, batch: 1)
        for m in [finn, finnToo, turk, plain, german] { _ = room.join(m, since: nil, now: 0) }
        let languages: [ConnectionID: String] = [finn: "fi", finnToo: "fi-FI", turk: "TR", german: "de"]
        room.push(Event("intel.added"), languages: ["fi", "tr"], data: { tag in
            ["body": .string(["fi": "Myöhässä", "tr": "Gecikme"][tag ?? ""] ?? "Delayed")]
        }, languageOf: { languages[$0] }, now: 1, sink: sink)
        func received(_ m: ConnectionID) -> [String] {
            sink.deliveries.filter { $0.1.contains(m) }.map { text($0.0) }
        }
        XCTAssertEqual(received(finn).count, 1)
        XCTAssertTrue(received(finn)[0].contains("Myöhässä"))
        XCTAssertTrue(received(finnToo)[0].contains("Myöhässä"), "fi-FI reads fi")
        XCTAssertTrue(received(turk)[0].contains("Gecikme"), "tags match whatever their case")
        XCTAssertTrue(received(plain)[0].contains("Delayed"))
        XCTAssertTrue(received(german)[0].contains("Delayed"), "no German version: the original")
        XCTAssertTrue(sink.deliveries.allSatisfy { text($0.0).contains("\"seq\":1,") }, "one seq for every version")
        XCTAssertEqual(sink.deliveries.filter { $0.1.contains(german) }.count, 1, "loop 1 got one hand-over")
    }

    func testRecoveryReplaysTheVersionOfTheReadersLanguage() {
        var room = Room(name: "route:c1", epoch: "e")
        let sink = RecordingSink()
        room.push(Event("intel.added"), languages: ["it"], data: { tag in .string(tag == "it" ? "Ritardo" : "Delay") },
                     languageOf: { _ in nil }, now: 1, sink: sink)
        room.push(Event("intel.expired"), data: "x", now: 2, sink: sink)
        guard case .recovered(let italian) = room.join(TestMember(id: 9, batch: 0), since: Since(seq: 0, epoch: "e"), now: 3, language: "it-IT"),
              case .recovered(let other) = room.join(TestMember(id: 10, batch: 0), since: Since(seq: 0, epoch: "e"), now: 3, language: nil)
        else { return XCTFail("both pushes are in the history") }
        XCTAssertEqual(italian.map(text).map { $0.contains("Ritardo") }, [true, false])
        XCTAssertEqual(other.map(text).map { $0.contains("Delay") }, [true, false])
    }
}

final class LanguageTagTests: XCTestCase {
    func testWellFormedTags() {
        for good in ["en", "fi", "tr", "it", "pt-BR", "zh-Hant-TW", "sr-Latn", "es-419", "de-CH-1996"] {
            XCTAssertTrue(LanguageTag.isWellFormed(good), good)
        }
        for bad in ["", "e", "english language", "en_US", "en-", "-en", "1a", "en-toolongsubtag", String(repeating: "a-b", count: 20), "fi\n"] {
            XCTAssertFalse(LanguageTag.isWellFormed(bad), bad)
        }
    }

    func testMatchPrefersTheSameTagThenTheSameLanguage() {
        XCTAssertEqual(LanguageTag.match("pt-BR", in: ["pt", "pt-BR"]), "pt-BR")
        XCTAssertEqual(LanguageTag.match("pt-PT", in: ["pt-BR", "pt"]), "pt", "the shortest of the same language")
        XCTAssertEqual(LanguageTag.match("FI", in: ["fi"]), "fi")
        XCTAssertEqual(LanguageTag.match("fi", in: ["fi-FI"]), "fi-FI")
        XCTAssertNil(LanguageTag.match("de", in: ["en", "fi"]))
        XCTAssertNil(LanguageTag.match("fil", in: ["fi"]), "Filipino is not Finnish")
    }
}
