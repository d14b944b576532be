/// Text folding for venue search (UC6: name or address), without Foundation.
public enum VenueText {
    /// Case- and accent-insensitive form of `s`, for matching a query against names and addresses:
    /// - lowercased (Unicode default case mapping of the standard library);
    /// - combining marks removed (scalars with a non-zero canonical combining class, or of general
    ///   category nonspacing/enclosing mark), so decomposed input ("e" + U+0301) folds like "e";
    /// - precomposed Latin letters mapped to their base letters by a table covering Latin-1
    ///   Supplement and Latin Extended-A (plus the Romanian comma-below letters and a few of
    ///   Latin Extended-B): "é" → "e", "ß" → "ss", "æ" → "ae", "œ" → "oe", "ø" → "o", "ł" → "l",
    ///   "đ"/"ð" → "d", "þ" → "th", "ı" → "i", "ĳ" → "ij";
    /// - typographic apostrophes (U+2018, U+2019, U+02BC) → "'";
    /// - runs of white space → one space, none at either end.
    /// Other scripts pass through lowercased. `normalized("Café Åland Straße") == "cafe aland strasse"`.
    public static func normalized(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in s.lowercased().unicodeScalars {
            let p = scalar.properties
            if p.canonicalCombiningClass != .notReordered || p.generalCategory == .nonspacingMark
                || p.generalCategory == .enclosingMark { continue }
            if p.isWhitespace {
                pendingSpace = !out.isEmpty
                continue
            }
            if pendingSpace {
                out.append(" ")
                pendingSpace = false
            }
            if let folded = fold[scalar] {
                out.append(contentsOf: folded.unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether `query`, normalized, occurs in `text`, normalized (an empty query matches everything).
    public static func matches(_ text: String, query: String) -> Bool {
        let q = normalized(query)
        return q.isEmpty || normalized(text).contains(q)
    }

    /// Lowercase letters with diacritics (and ligatures) → their plain Latin spelling.
    static let fold: [Unicode.Scalar: String] = {
        let table: [(String, String)] = [
            ("a", "àáâãäåāăąǎǟǡǻȁȃȧ"),
            ("ae", "æǣǽ"),
            ("c", "çćĉċč"),
            ("d", "ðďđ"),
            ("e", "èéêëēĕėęěȅȇȩ"),
            ("g", "ĝğġģǧǵ"),
            ("h", "ĥħȟ"),
            ("i", "ìíîïĩīĭįıǐȉȋ"),
            ("ij", "ĳ"),
            ("j", "ĵǰ"),
            ("k", "ķĸǩ"),
            ("l", "ĺļľŀł"),
            ("n", "ñńņňŉŋǹ"),
            ("o", "òóôõöøōŏőơǒǫǭǿȍȏȫȭȯȱ"),
            ("oe", "œ"),
            ("r", "ŕŗřȑȓ"),
            ("s", "śŝşšſș"),
            ("ss", "ß"),
            ("t", "ţťŧț"),
            ("th", "þ"),
            ("u", "ùúûüũūŭůűųưǔǖǘǚǜȕȗ"),
            ("w", "ŵ"),
            ("y", "ýÿŷȳ"),
            ("z", "źżž"),
            ("'", "\u{2018}\u{2019}\u{02BC}"),
        ]
        var map: [Unicode.Scalar: String] = [:]
        for (plain, letters) in table {
            for scalar in letters.unicodeScalars { map[scalar] = plain }
        }
        return map
    }()
}
