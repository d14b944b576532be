/// One song as the jukebox knows it. Its id in a venue's queue is its `uri` (e.g. a Spotify URI).
public struct Track: Sendable, Equatable, Hashable, Codable {
    public var uri: String
    public var title: String
    public var artist: String
    public var explicit: Bool
    public var durationMs: Int?
    public var coverUrl: String?

    public init(uri: String, title: String, artist: String, explicit: Bool = false,
                durationMs: Int? = nil, coverUrl: String? = nil) {
        self.uri = uri
        self.title = title
        self.artist = artist
        self.explicit = explicit
        self.durationMs = durationMs
        self.coverUrl = coverUrl
    }

    /// Checks the fields a queue relies on; `field` prefixes the field names in errors
    /// (`"track"` gives `track.uri`, `"tracks[3]"` gives `tracks[3].title`).
    func validate(field: String, limits: JukeboxLimits) throws(JukeboxError) {
        try Validate.text(uri, field: field + ".uri", max: limits.maxTextBytes)
        try Validate.text(title, field: field + ".title", max: limits.maxTextBytes)
        guard artist.utf8.count <= limits.maxTextBytes else {
            throw .badRequest(field: field + ".artist", message: "\(field).artist is longer than \(limits.maxTextBytes) bytes")
        }
        if let durationMs, durationMs < 0 {
            throw .badRequest(field: field + ".durationMs", message: "\(field).durationMs must not be negative")
        }
        if let coverUrl, coverUrl.utf8.count > limits.maxUrlBytes {
            throw .badRequest(field: field + ".coverUrl", message: "\(field).coverUrl is longer than \(limits.maxUrlBytes) bytes")
        }
    }
}

/// Size limits of one venue's jukebox: configuration, not per-venue settings (not persisted).
public struct JukeboxLimits: Sendable, Equatable {
    /// Most tracks in a playlist set by an owner.
    public var maxPlaylistTracks: Int
    /// Most tracks in the queue (playlist plus requests); a request beyond it is a `conflict`.
    public var maxQueueLength: Int
    /// Longest uri, title, artist, playlist uri, creator, user id (UTF-8 bytes).
    public var maxTextBytes: Int
    /// Longest cover URL (UTF-8 bytes).
    public var maxUrlBytes: Int
    /// Most finished tracks remembered for the no-repeat window.
    public var maxRecentPlays: Int

    public init(maxPlaylistTracks: Int = 5_000, maxQueueLength: Int = 10_000, maxTextBytes: Int = 1_024,
                maxUrlBytes: Int = 2_048, maxRecentPlays: Int = 10_000) {
        self.maxPlaylistTracks = maxPlaylistTracks
        self.maxQueueLength = maxQueueLength
        self.maxTextBytes = maxTextBytes
        self.maxUrlBytes = maxUrlBytes
        self.maxRecentPlays = maxRecentPlays
    }
}

enum Validate {
    /// Not empty (nor only white space) and at most `max` UTF-8 bytes.
    static func text(_ s: String, field: String, max: Int) throws(JukeboxError) {
        if s.allSatisfy(\.isWhitespace) { throw .badRequest(field: field, message: "\(field) is empty") }
        if s.utf8.count > max { throw .badRequest(field: field, message: "\(field) is longer than \(max) bytes") }
    }
}
