/// What an intel item is about (protocol.md: `kind`).
public enum IntelKind: String, Sendable, CaseIterable {
    /// Something in the way: a closed road, a delay, an open bridge.
    case disruption
    /// A place worth knowing: a new coffee place, a view, a discount.
    case poi
}

/// Who an item comes from.
public enum IntelOrigin: String, Sendable, CaseIterable {
    /// A transit operator or city service, through `POST /api/intel`.
    case provider
    /// A traveller, through `intel.post`.
    case traveler
}

/// How a traveller moves; an item says which modes it concerns (none: all of them).
public enum TravelMode: String, Sendable, CaseIterable {
    case walk, cycle, car, transit
}

/// Hashtags in a body become tags: `#` then letters, marks, digits or `_` of any script
/// (`#köprü`, `#ponte`, `#мост`, `#橋`), lower-cased, each once, in the order they appear.
public enum Hashtags {
    /// The tags of `text`, at most `limit`, each at most `maxLength` characters (longer ones are cut).
    public static func extract(from text: String, limit: Int = 20, maxLength: Int = 50) -> [String] {
        var tags: [String] = []
        var seen = Set<String>()
        var current: String.UnicodeScalarView?
        func finish() {
            if let scalars = current, !scalars.isEmpty {
                let tag = String(String(scalars).lowercased().prefix(maxLength))
                if tags.count < limit, seen.insert(tag).inserted { tags.append(tag) }
            }
            current = nil
        }
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            if current != nil {
                if isTagScalar(scalar) { current!.append(scalar); previous = scalar; continue }
                finish()
            }
            // A `#` starts a tag only at the start of a word (not in `a#b` or `&#39;`).
            if scalar == "#", previous.map({ !isTagScalar($0) && $0 != "&" }) ?? true { current = String.UnicodeScalarView() }
            previous = scalar
        }
        finish()
        return tags
    }

    static func isTagScalar(_ s: Unicode.Scalar) -> Bool {
        let p = s.properties
        if p.isAlphabetic || s == "_" { return true }
        switch p.generalCategory {
        case .decimalNumber, .nonspacingMark, .spacingMark, .enclosingMark, .connectorPunctuation: return true
        default: return false
        }
    }

    /// Whether `tag` is a tag as a client may give one in `tags` (without `#`).
    public static func isValid(_ tag: String, maxLength: Int = 50) -> Bool {
        !tag.isEmpty && tag.count <= maxLength && tag.unicodeScalars.allSatisfy(isTagScalar)
    }
}
