/// Type-ahead over artists' names (`artist.search`): a query matches the start of a name or of
/// any word in it, case and accents aside. Two sorted arrays of folded UTF-8 keys, searched by
/// binary search: a key stroke costs O(log n + results), whatever the number of artists.
public struct ArtistSearch: Sendable {
    private struct Entry: Sendable {
        var key: [UInt8]
        var artist: String
    }

    /// Whole names, and names from each later word on ("games" finds "Celia Games").
    private var names: [Entry] = []
    private var words: [Entry] = []

    public init(_ artists: some Sequence<(id: String, name: String)>) {
        for (id, name) in artists {
            let key = Array(NameKey.of(name).utf8)
            names.append(Entry(key: key, artist: id))
            var i = key.startIndex
            while let space = key[i...].firstIndex(where: Self.isSeparator) {
                i = key.index(after: space)
                if i < key.endIndex, !Self.isSeparator(key[i]) { words.append(Entry(key: Array(key[i...]), artist: id)) }
            }
        }
        let order: (Entry, Entry) -> Bool = { $0.key.lexicographicallyPrecedes($1.key) || ($0.key == $1.key && $0.artist < $1.artist) }
        names.sort(by: order)
        words.sort(by: order)
    }

    private static func isSeparator(_ b: UInt8) -> Bool { b == 0x20 || b == 0x2D || b == 0x2F || b == 0x2E || b == 0x28 }

    /// Up to `limit` artists whose name, or a word of it, starts with `query`: whole-name matches
    /// first, then word matches, each alphabetically. An empty query finds nothing.
    public func find(_ query: String, limit: Int) -> [String] {
        let q = Array(NameKey.of(query).utf8)
        guard !q.isEmpty, limit > 0 else { return [] }
        var out: [String] = [], seen = Set<String>()
        for list in [names, words] {
            var i = Self.lowerBound(list, q)
            while i < list.count, out.count < limit, list[i].key.starts(with: q) {
                if seen.insert(list[i].artist).inserted { out.append(list[i].artist) }
                i += 1
            }
            if out.count == limit { break }
        }
        return out
    }

    private static func lowerBound(_ list: [Entry], _ q: [UInt8]) -> Int {
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].key.lexicographicallyPrecedes(q) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
