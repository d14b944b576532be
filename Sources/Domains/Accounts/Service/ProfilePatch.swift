import DomainSeam
import Foundation
import Realtime

/// What `profile.update` changes. A field left out stays as it is; given empty or `null`, a text
/// field goes back to none (the alias to the username, the language to none: items are then shown
/// in their original text). Checked field by field in the order below, so the first bad one is named.
public struct ProfilePatch: Sendable {
    /// The linked accounts, by column: `.some(nil)` clears one.
    public var links: [(column: String, value: String?)] = []
    /// `favoriteArtists`, `favoriteGenres` by column.
    public var favorites: [(column: String, value: [String])] = []
    public var alias: String??
    public var language: String??
    /// Who sees each of the user's lists.
    public var privacy: [(PrivateList, Audience)] = []

    public var isEmpty: Bool { links.isEmpty && favorites.isEmpty && alias == nil && language == nil && privacy.isEmpty }

    /// Reads the fields of `profile.update`.
    /// - Throws: `badRequest` naming the first field that is not acceptable.
    public init(_ a: Args) throws(ProtocolError) {
        // Each is read only when given (present, even as null), so each is declared.
        a.declare("spotify", "facebook", "twitter", "favoriteArtists", "favoriteGenres", "alias", "language", "privacy")
        for field in ["spotify", "facebook", "twitter"] where a.value[field] != nil {
            let v = try a.optionalString(field, maxLength: 100)
            links.append((field, v?.isEmpty == true ? nil : v))
        }
        for (field, column) in [("favoriteArtists", "favorite_artists"), ("favoriteGenres", "favorite_genres")] where a.value[field] != nil {
            favorites.append((column, try a.optionalStringArray(field, maxCount: 200, maxLength: 200) ?? []))
        }
        if a.value["alias"] != nil {
            let alias = try a.optionalString("alias", maxLength: 200).map { $0.trimmingCharacters(in: .whitespaces) }
            if let alias, !alias.isEmpty { try Validation.alias(alias) }
            self.alias = .some(alias?.isEmpty == false ? alias : nil)
        }
        if a.value["language"] != nil {
            let tag = try a.optionalString("language", maxLength: 35).map { $0.trimmingCharacters(in: .whitespaces) }
            if let tag, !tag.isEmpty, !LanguageTag.isWellFormed(tag) {
                throw .badRequest("field language must be a BCP 47 language tag such as en, fi, tr or pt-BR")
            }
            language = .some(tag?.isEmpty == false ? tag : nil)
        }
        if let privacy = a.value["privacy"], privacy != .null {
            guard case .object(let fields) = privacy else { throw .badRequest("privacy must be an object {checkins?, votes?, requests?}") }
            for (key, value) in fields {
                guard let list = PrivateList(rawValue: key) else {
                    throw .badRequest("privacy.\(key): unknown list (checkins, votes or requests)")
                }
                guard case .string(let text) = value, let audience = Audience(rawValue: text) else {
                    throw .badRequest("privacy.\(key) must be \"everyone\" or \"nobody\"")
                }
                self.privacy.append((list, audience))
            }
        }
        guard !isEmpty else {
            throw .badRequest("nothing to update: give spotify, facebook, twitter, favoriteArtists, favoriteGenres, alias, language or privacy")
        }
    }
}
