/// The known name nearest a misspelt one, for errors that say `did you mean …?`.
public enum Spelling {
    /// The name of `known` closest to `name` by edit distance (letters inserted, deleted, changed,
    /// ignoring case), if one is close enough to be what was meant: at most a third of the longer
    /// name's letters differ, and never more than 4.
    public static func nearest(to name: String, among known: some Sequence<String>) -> String? {
        let target = Array(name.lowercased().unicodeScalars)
        var best: (name: String, distance: Int)?
        for candidate in known {
            let other = Array(candidate.lowercased().unicodeScalars)
            let allowed = min(4, max(1, max(target.count, other.count) / 3))
            guard abs(other.count - target.count) <= allowed else { continue }
            let d = distance(target, other)
            if d <= allowed, d < (best?.distance ?? .max) { best = (candidate, d) }
        }
        return best?.name
    }

    /// `nearest` as the end of a message: `" (did you mean x?)"`, or nothing.
    public static func suggestion(for name: String, among known: some Sequence<String>) -> String {
        nearest(to: name, among: known).map { " (did you mean \($0)?)" } ?? ""
    }

    /// Levenshtein distance, one row at a time.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
