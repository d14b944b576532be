import Foundation

/// What a JSON text holds, measured on its bytes without `JSONParser`: nesting, keys per object,
/// values, duplicate keys, and the non-RFC 8259 forms Foundation tolerates. Only ever run on text
/// Foundation accepted, so it can assume the text is well formed apart from those forms.
struct JSONShape {
    /// Containers inside containers on the deepest path (a scalar alone: 0).
    var depth = 0
    /// Most members of one object, duplicates counted (as `JSONParser` meets them).
    var maxKeys = 0
    /// Every value, containers included (object keys are not values).
    var values = 0
    /// Some object names one key twice. Keys are compared as Swift strings (canonical equivalence),
    /// as every reader of a parsed `JSON` looks them up: `{"é":1,"é":2}` with one key precomposed
    /// is a duplicate to them, so refusing it is what the parser must do.
    var duplicateKey = false
    /// Forms Foundation reads that RFC 8259 does not have; ours refuses them by design.
    var lenient: String?

    init(_ text: [UInt8]) {
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { lenient = "a byte order mark" }
        // Foundation guesses UTF-16/32 from NUL bytes; no JSON text holds one.
        if text.contains(0) { lenient = "a NUL byte" }
        struct Container {
            var isObject: Bool
            var keys: [String] = []
            var expectsKey = false
        }
        var stack: [Container] = []
        var lastSignificant: UInt8 = 0
        var i = 0
        while i < text.count {
            let c = text[i]
            switch c {
            case 0x20, 0x09, 0x0A, 0x0D:
                i += 1
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                values += 1
                stack.append(Container(isObject: c == UInt8(ascii: "{"), expectsKey: c == UInt8(ascii: "{")))
                depth = max(depth, stack.count)
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if lastSignificant == UInt8(ascii: ",") { lenient = "a trailing comma" }
                _ = stack.popLast()
                i += 1
            case UInt8(ascii: ","):
                if !stack.isEmpty, stack[stack.count - 1].isObject { stack[stack.count - 1].expectsKey = true }
                i += 1
            case UInt8(ascii: ":"):
                if !stack.isEmpty { stack[stack.count - 1].expectsKey = false }
                i += 1
            case UInt8(ascii: "\""):
                let start = i
                i += 1
                while i < text.count, text[i] != UInt8(ascii: "\"") { i += text[i] == UInt8(ascii: "\\") ? 2 : 1 }
                i += 1
                if !stack.isEmpty, stack[stack.count - 1].expectsKey {
                    // The key decoded by Foundation, not by the parser under test.
                    let raw = Data(text[start..<min(i, text.count)])
                    let key = (try? JSONSerialization.jsonObject(with: raw, options: [.fragmentsAllowed])) as? String ?? ""
                    if stack[stack.count - 1].keys.contains(key) { duplicateKey = true }
                    stack[stack.count - 1].keys.append(key)
                    maxKeys = max(maxKeys, stack[stack.count - 1].keys.count)
                } else {
                    values += 1
                }
            default: // a number or a literal: up to the next delimiter
                values += 1
                while i < text.count, ![0x20, 0x09, 0x0A, 0x0D, 0x2C, 0x5D, 0x7D, 0x3A].contains(text[i]) { i += 1 }
            }
            lastSignificant = c
        }
    }

    /// Within every limit (duplicates aside).
    func fits(_ maxDepth: Int, _ maxKeysPerObject: Int, _ maxValues: Int) -> Bool {
        depth <= maxDepth && maxKeys <= maxKeysPerObject && values <= maxValues
    }
}
