/// BCP 47 language tags as readers set them (`profile.update {language}`) and as texts carry them
/// (a transit alert's translations): checked for shape, and matched reader to text.
public enum LanguageTag {
    /// Whether `tag` is shaped like a BCP 47 tag: a primary language of 2–3 letters (or 4–8
    /// registered ones), then subtags of 1–8 letters or digits, separated by hyphens; 35 characters
    /// at most. (Registry membership is not checked: a tag unknown here still matches itself.)
    public static func isWellFormed(_ tag: String) -> Bool {
        guard !tag.isEmpty, tag.utf8.count <= 35 else { return false }
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let primary = parts.first, (2...8).contains(primary.count), primary.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// The tag among `available` that a reader of `preferred` should see: the same tag (case does
    /// not matter), else one with the same primary language (a reader of `fi-FI` reads `fi`, a
    /// reader of `pt` reads `pt-BR`), else none. Ties go to the shortest, then the first in order.
    public static func match(_ preferred: String, in available: some Collection<String>) -> String? {
        let wanted = preferred.lowercased()
        if let exact = available.first(where: { $0.lowercased() == wanted }) { return exact }
        let primary = Self.primary(wanted)
        return available.filter { Self.primary($0.lowercased()) == primary }.min { ($0.count, $0) < ($1.count, $1) }
    }

    private static func primary(_ tag: String) -> Substring {
        tag.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }
}
