import Realtime

/// Input rules for accounts; each failure names the field.
enum Validation {
    static func username(_ s: String) throws(ProtocolError) {
        guard (3...32).contains(s.count) else { throw .badRequest("username must be 3 to 32 characters") }
        guard s.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) })
        else { throw .badRequest("username may hold only letters, digits, '.', '_' and '-'") }
    }

    static func email(_ s: String) throws(ProtocolError) {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        guard s.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
              !parts[1].hasSuffix("."), !s.contains(where: { $0 == " " || $0.isNewline })
        else { throw .badRequest("email is not a valid address") }
    }

    static func password(_ s: String, min: Int, max: Int, field: String = "password") throws(ProtocolError) {
        guard s.count >= min else { throw .badRequest("\(field) must be at least \(min) characters") }
        guard s.count <= max else { throw .badRequest("\(field) must be at most \(max) characters") }
        guard s.contains(where: { $0.isLetter }), s.contains(where: { $0.isNumber }) else {
            throw .badRequest("\(field) must contain a letter and a digit")
        }
    }

    /// An alias: what others see beside a user's contributions (1 to 40 characters, no control characters).
    static func alias(_ s: String) throws(ProtocolError) {
        guard (1...40).contains(s.count) else { throw .badRequest("alias must be 1 to 40 characters") }
        guard !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .badRequest("alias may not hold control characters")
        }
    }
}
