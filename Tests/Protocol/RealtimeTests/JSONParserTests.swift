import Foundation
import Realtime
import XCTest

/// The request parser: strict RFC 8259, its limits refused as limits, and the shapes a hostile
/// client would send (many keys, deep nesting, escapes, numbers) parsed right.
final class JSONParserTests: XCTestCase {
    private func parse(_ text: String, _ limits: JSONParser.Limits = JSONParser.Limits()) throws -> JSON {
        try JSONParser.parse(Array(text.utf8), limits: limits)
    }

    private func refusal(_ text: String, _ limits: JSONParser.Limits = JSONParser.Limits()) -> JSONParser.Error? {
        do { _ = try parse(text, limits); return nil } catch let e as JSONParser.Error { return e } catch { return nil }
    }

    private func object(keys n: Int, duplicateLast: Bool = false) -> String {
        "{" + (0..<n).map { "\"k\(duplicateLast && $0 == n - 1 ? 0 : $0)\":\($0)" }.joined(separator: ",") + "}"
    }

    func testKeysPerObjectUpToTheLimitAndNotOneMore() throws {
        let limits = JSONParser.Limits(maxKeysPerObject: 1000)
        guard case .object(let pairs) = try parse(object(keys: 1000), limits) else { return XCTFail("not an object") }
        XCTAssertEqual(pairs.count, 1000)
        XCTAssertEqual(pairs[999].0, "k999", "keys keep their order")
        let e = refusal(object(keys: 1001), limits)
        XCTAssertEqual(e?.isLimit, true)
        XCTAssertEqual(e?.reason, "more than 1000 keys in an object")
        XCTAssertEqual(refusal(object(keys: 4), JSONParser.Limits(maxKeysPerObject: 3))?.isLimit, true, "a limit below the hashed size too")
        XCTAssertNoThrow(try parse(object(keys: 3), JSONParser.Limits(maxKeysPerObject: 3)))
    }

    func testDuplicateKeysAreFoundInSmallAndLargeObjects() {
        for n in [2, 12, 13, 500] {
            let e = refusal(object(keys: n, duplicateLast: true), JSONParser.Limits(maxKeysPerObject: 10_000))
            XCTAssertEqual(e?.reason, "duplicate key \"k0\"", "\(n) keys")
            XCTAssertEqual(e?.isLimit, false)
        }
        XCTAssertNotNil(refusal(#"{"a":{"b":1,"b":2}}"#), "in a nested object too")
        XCTAssertNoThrow(try parse(#"{"a":{"b":1},"b":{"a":2}}"#), "the same key in different objects is fine")
    }

    func testEveryDuplicateIsFoundAcrossTheKeyIndexGrowing() throws {
        // The index starts at 64 slots and doubles at half full: duplicates of keys from before and
        // after each growth, placed before and after it, with keys of every length.
        var random = SystemRandomNumberGenerator()
        let keys = (0..<1500).map { "key-\($0)-" + String(repeating: "x", count: $0 % 40) }
        let limits = JSONParser.Limits(maxKeysPerObject: 10_000)
        for n in [13, 32, 33, 64, 65, 129, 700, 1500] {
            let unique = "{" + keys.prefix(n).map { "\"\($0)\":1" }.joined(separator: ",") + "}"
            guard case .object(let pairs) = try parse(unique, limits) else { return XCTFail("not an object") }
            XCTAssertEqual(pairs.map(\.0), Array(keys.prefix(n)), "\(n) distinct keys are all kept, in order")
            for _ in 0..<5 {
                let repeated = Int.random(in: 0..<n, using: &random)
                var list = Array(keys.prefix(n))
                list.insert(list[repeated], at: Int.random(in: (repeated + 1)...n, using: &random))
                let text = "{" + list.map { "\"\($0)\":1" }.joined(separator: ",") + "}"
                XCTAssertEqual(refusal(text, limits)?.reason, "duplicate key \"\(keys[repeated])\"", "\(n) keys, key \(repeated) twice")
            }
        }
    }

    func testValuesInTheWholeTextCountContainersToo() throws {
        // Six values: the outer array, 1, the inner array, 2, 3 and 4.
        let limits = JSONParser.Limits(maxValues: 5)
        XCTAssertEqual(refusal("[1,[2,3],4]", limits)?.isLimit, true)
        XCTAssertNoThrow(try parse("[1,[2,3],4]", JSONParser.Limits(maxValues: 6)))
        XCTAssertEqual(refusal("[[],[],[],[],[],[]]", limits)?.reason, "more than 5 values")
    }

    func testDepthIsTheNumberOfNestedContainers() throws {
        let limits = JSONParser.Limits(maxDepth: 3)
        XCTAssertEqual(try parse("[[[1]]]", limits), [[[1]]])
        let e = refusal("[[[[1]]]]", limits)
        XCTAssertEqual(e?.isLimit, true)
        XCTAssertEqual(e?.reason, "nested deeper than 3")
        XCTAssertEqual(refusal(String(repeating: "[", count: 100_000))?.isLimit, true, "never recurses past the limit")
    }

    func testNumbers() throws {
        XCTAssertEqual(try parse("9223372036854775807"), .int(Int.max))
        XCTAssertEqual(try parse("-9223372036854775808"), .int(Int.min))
        XCTAssertEqual(try parse("9223372036854775808"), .double(9223372036854775808))
        XCTAssertEqual(try parse("-0"), .int(0))
        XCTAssertEqual(try parse("[1.5e2,-2.25,1E-3]"), [150.0, -2.25, 0.001])
        XCTAssertEqual(refusal("1e400")?.reason, "number out of range", "infinity cannot be sent back as JSON")
        for bad in ["01", "1.", ".5", "-", "1e", "+1", "0x10", "1e+"] { XCTAssertNotNil(refusal(bad), bad) }
    }

    func testStringsAndEscapes() throws {
        XCTAssertEqual(try parse(#""caf\u00e9 \ud83c\udfb5 \"q\" \\ \/ \b\f\n\r\t""#), .string("café 🎵 \"q\" \\ / \u{8}\u{c}\n\r\t"))
        XCTAssertEqual(try parse(#""plain, no escapes""#), .string("plain, no escapes"))
        XCTAssertEqual(try parse("\"ünïcødé\""), .string("ünïcødé"))
        for bad in [#""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\x""#, #""\u12g4""#, "\"a\nb\"", #""open"#, #""\"#] {
            XCTAssertNotNil(refusal(bad), bad)
        }
    }

    func testInvalidUTF8InAStringIsRefusedNotRepaired() {
        // An HTTP body reaches the parser unchecked (a WebSocket text message is checked before).
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0x61, 0xC3, 0x22], [0x22, 0x5C, 0x6E, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]] {
            XCTAssertThrowsError(try JSONParser.parse(bytes), "\(bytes)") { error in
                XCTAssertEqual((error as? JSONParser.Error)?.reason, "invalid UTF-8 in string")
            }
        }
        XCTAssertEqual(try JSONParser.parse(Array("\"ä\\n€\"".utf8)), .string("ä\n€"))
    }

    func testEncodedValuesParseBackEqual() throws {
        var random = SystemRandomNumberGenerator()
        func value(_ depth: Int) -> JSON {
            switch Int.random(in: 0...(depth > 3 ? 4 : 6), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .int(Int.random(in: Int.min...Int.max, using: &random))
            case 3: return .double(Double.random(in: -1e300...1e300, using: &random))
            case 4: return .string(String((0..<Int.random(in: 0...20, using: &random)).map { _ in
                Character(Unicode.Scalar([0x22, 0x5C, 0x0A, 0x01, 0xE9, 0x1F3B5, 0x41].randomElement(using: &random)!)!)
            }))
            case 5: return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in value(depth + 1) })
            default: return .object((0..<Int.random(in: 0...5, using: &random)).map { ("k\($0)", value(depth + 1)) })
            }
        }
        for _ in 0..<2000 {
            let v = value(0)
            XCTAssertEqual(try JSONParser.parse(Array(v.encoded.utf8)), v, v.encoded)
        }
    }

    func testARequestOverALimitIsTooLargeAndBadJSONIsABadRequest() {
        let many = #"{"id":1,"op":"auth","args":"# + object(keys: 20) + "}"
        guard case .failure(let r) = Request.parse(Array(many.utf8), limits: JSONParser.Limits(maxKeysPerObject: 10)) else {
            return XCTFail("accepted")
        }
        XCTAssertEqual(r.error.code, .tooLarge)
        XCTAssertTrue(r.error.message.contains("more than 10 keys"), r.error.message)
        guard case .failure(let bad) = Request.parse(Array(#"{"id":1,"op":}"#.utf8)) else { return XCTFail("accepted") }
        XCTAssertEqual(bad.error.code, .badRequest)
    }
}

/// `did you mean …?` and the refusal of arguments nothing asked for.
final class SpellingAndUnknownFieldTests: XCTestCase {
    func testTheNearestKnownNameIsSuggestedWhenClose() {
        XCTAssertEqual(Spelling.nearest(to: "votesPerHourr", among: ["venue", "votesPerHour", "explicitAllowed"]), "votesPerHour")
        XCTAssertEqual(Spelling.nearest(to: "limits.maxConnectionsPerIpp", among: ["limits.maxConnectionsPerIp", "limits.maxConnections"]),
                       "limits.maxConnectionsPerIp")
        XCTAssertEqual(Spelling.nearest(to: "HUBBUB_LIMITS_MAX_CONECTIONS_PER_IP", among: ["HUBBUB_LIMITS_MAX_CONNECTIONS_PER_IP", "HUBBUB_PORT"]),
                       "HUBBUB_LIMITS_MAX_CONNECTIONS_PER_IP")
        XCTAssertEqual(Spelling.nearest(to: "TRACK", among: ["track"]), "track", "case does not count")
        XCTAssertNil(Spelling.nearest(to: "colour", among: ["venue", "track"]), "nothing close: no suggestion")
        XCTAssertEqual(Spelling.suggestion(for: "trak", among: ["track"]), " (did you mean track?)")
        XCTAssertEqual(Spelling.suggestion(for: "zzzz", among: ["track"]), "")
    }

    func testAFieldNothingAskedForIsNamedWithTheNearestAskedOne() throws {
        let args = Args(["venue": "v1", "votesPerHourr": 5, "since": ["seq": 1, "epoch": "e", "epoc": "x"]])
        _ = try args.string("venue")
        _ = try args.optionalInt("votesPerHour")
        XCTAssertEqual(args.unknownField()?.message, "unknown field votesPerHourr (did you mean votesPerHour?)")
        XCTAssertEqual(args.unknownField()?.code, .badRequest)

        let fixed = Args(["venue": "v1", "since": ["seq": 1, "epoch": "e", "epoc": "x"]])
        _ = try fixed.string("venue")
        let since = try fixed.object("since")
        _ = try since.int("seq")
        _ = try since.string("epoch")
        XCTAssertEqual(fixed.unknownField()?.message, "unknown field since.epoc (did you mean since.epoch?)", "inside objects read as arguments")

        let declared = Args(["alias": "x"])
        declared.declare("alias", "language")
        XCTAssertNil(declared.unknownField())
        XCTAssertNil(Args([:]).unknownField())
    }
}
