// libFuzzer target for `JSONParser` (Sources/Protocol/Realtime): .build-fuzz/fuzz-json. Every request,
// provider post and scenario file goes through it.
//
// Input: [limits selector][maxDepth][maxKeysPerObject][maxValues] then the JSON text. A quarter
// of the runs use the default limits, a quarter the old `parse(_:maxDepth:)`, half small random
// limits, so that limits are met at every position.
//
// Invariants:
// - an accepted text is accepted by Foundation's JSONSerialization (an independent parser) as
//   the same value, and is within the limits (depth, keys per object, values);
// - an accepted value encodes (`JSON.encoded`) to text that parses back to the same value and
//   encodes to the same text again;
// - a text Foundation accepts is accepted, unless it holds a form outside RFC 8259 that
//   Foundation tolerates (byte order mark, NUL, trailing comma), a duplicate key, or is over a
//   limit, all measured by `JSONShape` rather than taken from the parser's error; and then the
//   refusal says `isLimit` exactly when only a limit is passed;
// - whatever Foundation writes (its re-serialisation of what it read) parses to the same value;
// - `parse(_:maxDepth:)` is `parse(_:limits:)` with that depth and the default limits.

import Foundation
import Realtime

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = Input(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    let selector = input.byte(), a = input.byte(), b = input.byte(), c = input.byte()
    let text = input.rest
    var limits = JSONParser.Limits()
    switch selector % 4 {
    case 0:
        break
    case 1:
        limits.maxDepth = Int(a % 40)
        let old = Result { () throws(JSONParser.Error) in try JSONParser.parse(text, maxDepth: limits.maxDepth) }
        let new = Result { () throws(JSONParser.Error) in try JSONParser.parse(text, limits: limits) }
        check(old == new, "parse(_:maxDepth:) gives \(old), parse(_:limits:) \(new)")
    default:
        limits = JSONParser.Limits(maxDepth: Int(a % 10), maxKeysPerObject: Int(b % 20), maxValues: Int(c % 80))
    }
    checkText(text, limits: limits)
    return 0
}

func checkText(_ text: [UInt8], limits: JSONParser.Limits) {
    let foundation = try? JSONSerialization.jsonObject(with: Data(text), options: [.fragmentsAllowed])
    let ours: JSON
    do throws(JSONParser.Error) {
        ours = try JSONParser.parse(text, limits: limits)
    } catch {
        check(error.offset >= 0 && error.offset <= text.count, "error offset \(error.offset) outside the text")
        if let foundation { checkRefusal(error, text, foundation, limits) }
        return
    }
    guard let foundation else {
        fatalError("invariant broken: accepted text Foundation refuses (\(ours.encoded.prefix(200)))")
    }
    check(same(ours, foundation), "value differs from Foundation's: \(ours.encoded.prefix(200)) vs \(foundation)")
    let measured = measure(ours)
    check(measured.depth <= limits.maxDepth, "depth \(measured.depth) over the limit \(limits.maxDepth)")
    check(measured.maxKeys <= limits.maxKeysPerObject, "\(measured.maxKeys) keys in an object, limit \(limits.maxKeysPerObject)")
    check(measured.values <= limits.maxValues, "\(measured.values) values, limit \(limits.maxValues)")
    let encoded = ours.encoded
    do throws(JSONParser.Error) {
        let back = try JSONParser.parse(Array(encoded.utf8), limits: limits)
        check(back == ours, "re-encoded value parses to another value: \(encoded.prefix(200))")
        check(back.encoded == encoded, "re-encoding is not stable: \(encoded.prefix(200))")
    } catch {
        fatalError("invariant broken: our own encoding \(encoded.prefix(200)) does not parse: \(error)")
    }
}

/// Foundation accepted `text` and ours did not: only for reasons `JSONShape` confirms.
func checkRefusal(_ error: JSONParser.Error, _ text: [UInt8], _ foundation: Any, _ limits: JSONParser.Limits) {
    checkFoundationWrites(foundation)
    let shape = JSONShape(text)
    guard shape.lenient == nil else { return }
    let fits = shape.fits(limits.maxDepth, limits.maxKeysPerObject, limits.maxValues)
    check(!fits || shape.duplicateKey, "refused valid JSON within the limits: \(error)")
    if !shape.duplicateKey { check(error.isLimit, "over a limit, refused without isLimit: \(error)") }
    if fits { check(!error.isLimit, "within the limits, refused with isLimit: \(error)") }
}

/// Whatever Foundation writes for a value it read parses (with room for any size) to the same value.
func checkFoundationWrites(_ foundation: Any) {
    guard let written = try? JSONSerialization.data(withJSONObject: foundation, options: [.fragmentsAllowed]) else { return }
    let roomy = JSONParser.Limits(maxDepth: 600, maxKeysPerObject: .max, maxValues: .max)
    do throws(JSONParser.Error) {
        let ours = try JSONParser.parse(Array(written), limits: roomy)
        check(same(ours, foundation), "Foundation's own text reads as another value: \(String(decoding: written.prefix(200), as: UTF8.self))")
    } catch {
        fatalError("invariant broken: Foundation's own text is refused (\(error)): \(String(decoding: written.prefix(200), as: UTF8.self))")
    }
}

/// Whether our value is what Foundation read (numbers within rounding: Foundation reads integers
/// beyond 64 bits as decimals, whose conversion to Double may differ in the last place).
func same(_ ours: JSON, _ theirs: Any) -> Bool {
    switch ours {
    case .null:
        return theirs is NSNull
    case .bool(let b):
        return (theirs as? Bool) == b
    case .int(let i):
        guard let n = theirs as? NSNumber else { return false }
        return n.int64Value == Int64(i) || close(Double(i), n.doubleValue)
    case .double(let d):
        guard let n = theirs as? NSNumber else { return false }
        return close(d, n.doubleValue)
    case .string(let s):
        guard let t = theirs as? String else { return false }
        return s.unicodeScalars.elementsEqual(t.unicodeScalars)
    case .array(let items):
        guard let others = theirs as? [Any], others.count == items.count else { return false }
        return zip(items, others).allSatisfy { same($0, $1) }
    case .object(let pairs):
        guard let others = theirs as? [String: Any], others.count == pairs.count else { return false }
        return pairs.allSatisfy { key, value in others[key].map { same(value, $0) } ?? false }
    case .raw:
        return false // never produced by parsing
    }
}

func close(_ a: Double, _ b: Double) -> Bool {
    a == b || abs(a - b) <= 1e-12 * max(abs(a), abs(b))
}

/// Depth (containers on the deepest path), most keys in one object, and values of a parsed value.
func measure(_ json: JSON) -> (depth: Int, maxKeys: Int, values: Int) {
    switch json {
    case .array(let items):
        let inner = items.map(measure)
        return (1 + (inner.map(\.depth).max() ?? 0), inner.map(\.maxKeys).max() ?? 0, 1 + inner.reduce(0) { $0 + $1.values })
    case .object(let pairs):
        let inner = pairs.map { measure($0.1) }
        return (1 + (inner.map(\.depth).max() ?? 0), max(pairs.count, inner.map(\.maxKeys).max() ?? 0), 1 + inner.reduce(0) { $0 + $1.values })
    default:
        return (0, 0, 1)
    }
}
