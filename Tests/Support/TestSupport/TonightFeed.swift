/// Event feeds for tests of tonight's domain (on one node or several).
public enum TonightFeed {
    /// 18:00 in Madrid on Sunday 2026-11-22 (the feeds' events are that night's and the next).
    public static let start = 1_795_366_800.0

    /// A feed of feeds.md's shape: two artists, two venues in Madrid, and `events`
    /// (`id, artist, venue, date, time, status, price`).
    public static func xml(_ events: [(String, String, String, String, String, String, String)]) -> [UInt8] {
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <EventFeed>
              <Category ID="1"><CategoryName>Music</CategoryName></Category>
              <Category ID="20"><CategoryName>E-sports</CategoryName></Category>
              <Artist ID="A1"><ArtistCategory ID="1"/><ArtistName>Celia Games</ArtistName></Artist>
              <Artist ID="A2"><ArtistCategory ID="1"/><ArtistName>Björk Tribute</ArtistName></Artist>
              <Venue ID="MAD"><VenueName>La Riviera</VenueName><VenueLatitude>40.4128</VenueLatitude><VenueLongitude>-3.7200</VenueLongitude>
                <VenueTimeZone>Europe/Madrid</VenueTimeZone></Venue>
              <Venue ID="MAD2"><VenueName>Sala But</VenueName><VenueLatitude>40.4290</VenueLatitude><VenueLongitude>-3.7100</VenueLongitude>
                <VenueTimeZone>Europe/Madrid</VenueTimeZone></Venue>

            """
        for (id, artist, venue, date, time, status, price) in events {
            xml += """
                  <Event ID="\(id)"><EventPerformer ID="\(artist)"/><EventCategory ID="1"/><EventVenue ID="\(venue)"/><EventDate>\(date)</EventDate>
                    <EventTime>\(time)</EventTime><EventStatus>\(status)</EventStatus><MinPrice>\(price)</MinPrice><Currency>EUR</Currency></Event>

                """
        }
        return Array((xml + "</EventFeed>\n").utf8)
    }
}
