import XCTest
import WebSocket

/// UTF-8 validation of text messages (RFC 6455 §8.1): 1007 on invalid text, failing fast.
final class UTF8Tests: XCTestCase {
    static let invalid: [(String, [UInt8])] = [
        ("overlong 2-byte NUL", hex("c0 80")),
        ("overlong 2-byte C1", hex("c1 bf")),
        ("overlong 3-byte", hex("e0 80 80")),
        ("overlong 3-byte max", hex("e0 9f bf")),
        ("overlong 4-byte", hex("f0 80 80 80")),
        ("overlong 4-byte max", hex("f0 8f bf bf")),
        ("surrogate D800", hex("ed a0 80")),
        ("surrogate DFFF", hex("ed bf bf")),
        ("above U+10FFFF", hex("f4 90 80 80")),
        ("F5 lead", hex("f5 80 80 80")),
        ("FE", hex("fe")),
        ("FF", hex("ff")),
        ("stray continuation", hex("80")),
        ("stray continuation after ASCII", hex("61 62 bf")),
        ("lead then ASCII", hex("e2 28 a1")),
        ("2-byte lead then ASCII", hex("c3 28")),
        ("truncated 2-byte at end", hex("61 c3")),
        ("truncated 3-byte at end", hex("e2 82")),
        ("truncated 4-byte at end", hex("f0 9f 98")),
    ]

    static let valid: [[UInt8]] = [
        [], Array("plain ASCII, longer than eight bytes".utf8),
        hex("c2 80"), hex("df bf"), hex("e0 a0 80"), hex("ed 9f bf"), hex("ee 80 80"), hex("ef bf bf"),
        hex("f0 90 80 80"), hex("f4 8f bf bf"), Array("κόσμε €😀 Hubbub".utf8),
    ]

    func testValidatorAcceptsValidAndRejectsInvalid() {
        for v in Self.valid {
            XCTAssertTrue(UTF8Validator.isValid(v), hexString(v))
            // Byte by byte too.
            var d = UTF8Validator()
            for b in v { XCTAssertTrue(d.feed([b])) }
            XCTAssertTrue(d.isComplete)
        }
        for (name, bytes) in Self.invalid {
            XCTAssertFalse(UTF8Validator.isValid(bytes), name)
            // Also with a long ASCII run in front (the 8-byte fast path).
            XCTAssertFalse(UTF8Validator.isValid(Array("0123456789abcdef".utf8) + bytes), name)
        }
    }

    func testValidatorAgreesWithStandardLibraryOnAllShortSequences() {
        // Every 1- and 2-byte sequence and a sample of 3- and 4-byte ones.
        func stdlibValid(_ b: [UInt8]) -> Bool {
            var it = b.makeIterator()
            var decoder = UTF8()
            while true {
                switch decoder.decode(&it) {
                case .scalarValue: continue
                case .emptyInput: return true
                case .error: return false
                }
            }
        }
        var sequences: [[UInt8]] = []
        for a in 0...255 { sequences.append([UInt8(a)]) }
        for a in 0xC0...0xFF { for b in 0...255 { sequences.append([UInt8(a), UInt8(b)]) } }
        for a in [0xE0, 0xE1, 0xED, 0xEE, 0xEF] as [UInt8] { for b in 0x70...0xC5 { for c in [0x41, 0x80, 0xBF, 0xC0] as [UInt8] {
            sequences.append([a, UInt8(b), c])
        } } }
        for a in [0xF0, 0xF1, 0xF3, 0xF4, 0xF5] as [UInt8] { for b in [0x7F, 0x80, 0x8F, 0x90, 0xBF, 0xC0] as [UInt8] {
            sequences.append([a, b, 0x80, 0xBF])
        } }
        for s in sequences {
            XCTAssertEqual(UTF8Validator.isValid(s), stdlibValid(s), hexString(s))
        }
    }

    func testFeedReportsIncompleteCharacter() {
        var v = UTF8Validator()
        XCTAssertTrue(v.feed(hex("e2 82")))
        XCTAssertFalse(v.isComplete)
        XCTAssertFalse(v.isInvalid)
        XCTAssertTrue(v.feed(hex("ac")))
        XCTAssertTrue(v.isComplete)
        XCTAssertFalse(v.feed(hex("80")))
        XCTAssertTrue(v.isInvalid)
        v.reset()
        XCTAssertTrue(v.isComplete)
    }

    func testMultiByteCharactersSplitAcrossFragmentsAtEveryPosition() {
        let text = "aé€😀z𐍈ü"
        let bytes = Array(text.utf8)
        for i in 0...bytes.count {
            var m = makeMachine(.server)
            let wire = clientFrame(.text, Array(bytes[..<i]), fin: false) + clientFrame(.continuation, Array(bytes[i...]))
            XCTAssertEqual(m.feed(wire), [.deliver(.text(text))], "split at \(i)")
            for j in i...bytes.count {
                var m3 = makeMachine(.server)
                let wire3 = clientFrame(.text, Array(bytes[..<i]), fin: false)
                    + clientFrame(.continuation, Array(bytes[i..<j]), fin: false)
                    + clientFrame(.continuation, Array(bytes[j...]))
                XCTAssertEqual(m3.feed(wire3), [.deliver(.text(text))], "split at \(i), \(j)")
            }
        }
        // One byte per fragment.
        var m = makeMachine(.server)
        var wire: [UInt8] = []
        for (k, b) in bytes.enumerated() {
            wire += clientFrame(k == 0 ? .text : .continuation, [b], fin: k == bytes.count - 1)
        }
        XCTAssertEqual(m.feed(wire), [.deliver(.text(text))])
    }

    func testInvalidSingleFrameTextFails1007() {
        for (name, bytes) in Self.invalid {
            var m = makeMachine(.server)
            let actions = m.feed(clientFrame(.text, bytes))
            assertFails(actions, with: .invalidPayload)
            XCTAssertEqual(m.state, .closed, name)
        }
    }

    func testInvalidBytesInBinaryAreFine() {
        for (name, bytes) in Self.invalid {
            var m = makeMachine(.server)
            XCTAssertEqual(m.feed(clientFrame(.binary, bytes)), [.deliver(.binary(bytes))], name)
        }
    }

    func testInvalidFragmentedTextFails1007() {
        for (name, bytes) in Self.invalid {
            for cut in 0...bytes.count {
                var m = makeMachine(.server)
                let wire = clientFrame(.text, Array(bytes[..<cut]), fin: false) + clientFrame(.continuation, Array(bytes[cut...]))
                assertFails(m.feed(wire), with: .invalidPayload)
                XCTAssertEqual(m.state, .closed, "\(name) cut \(cut)")
            }
        }
    }

    func testTruncatedAtFINWithEmptyFinalFragmentFails() {
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, hex("61 e2 82"), fin: false)), [], "an incomplete character mid-message is fine")
        assertFails(m.feed(clientFrame(.continuation, [])), with: .invalidPayload)
    }

    func testFailsFastOnTheBadFragment() {
        // The first fragment is valid; the second makes the text invalid and is not final.
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, Array("valid ".utf8), fin: false)), [])
        assertFails(m.feed(clientFrame(.continuation, hex("61 c0 80 62"), fin: false)), with: .invalidPayload)
        XCTAssertEqual(m.feed(clientFrame(.continuation, Array("end".utf8))), [], "the final fragment never matters")
        // Invalid in the very first fragment.
        var m2 = makeMachine(.server)
        assertFails(m2.feed(clientFrame(.text, hex("ed a0 80"), fin: false)), with: .invalidPayload)
        // Fail fast even when only a prefix of a character proves it invalid (F4 90 is already > U+10FFFF).
        var m3 = makeMachine(.server)
        assertFails(m3.feed(clientFrame(.text, hex("f4 90"), fin: false)), with: .invalidPayload)
        // A stray continuation starting a fragment after a complete character.
        var m4 = makeMachine(.server)
        XCTAssertEqual(m4.feed(clientFrame(.text, hex("c3 a9"), fin: false)), [])
        assertFails(m4.feed(clientFrame(.continuation, hex("a9"), fin: false)), with: .invalidPayload)
    }

    func testClientRoleValidatesToo() {
        var m = makeMachine(.client)
        assertFails(m.feed(serverFrame(.text, hex("ed a0 80"))), with: .invalidPayload, role: .client)
    }
}
