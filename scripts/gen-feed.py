#!/usr/bin/env python3
"""Generate a seed-shaped event-info XML feed (and optionally its affinity feed) for Hubbub.

The shape is that of feeds.md (the ingest contract), "Event-info feed" and "Affinity feed",
modelled on seed 000 (Tickets Tonight): a 118.9 MB XML file with about 20,000 artists,
13,700 venues, 75 categories and 60,000 events, and an 11.1 MB affinity text file. Standard library only; deterministic for a
--seed (and --start-date); the output is streamed (one record at a time), never held whole.

  python3 scripts/gen-feed.py --out /tmp/feed-119.xml --affinity /tmp/affinity.txt
  python3 scripts/gen-feed.py --artists 200 --venues 100 --events 500 --bad --out /tmp/bad.xml
  python3 scripts/gen-feed.py --events 1000 --shuffle --out - | curl --data-binary @- ...

Options (defaults in brackets):
  --artists N [20000] --venues N [13700] --categories N [75] --events N [60000]
  --seed N [1]          everything derives from it (with --start-date)
  --start-date D [2026-11-01] --days N [120]   event dates are D .. D+days-1 (venue-local)
  --out FILE            the XML feed ("-" = stdout); omit to write only --affinity
  --size-mb X           aim the XML at X MB (10^6 bytes) by sizing the descriptions (unknown
                        elements ArtistDescription, VenueDescription, EventNotes). Default: the
                        seed's 118.9 MB scaled by the record counts (so small feeds stay small).
                        It only adds bytes: without descriptions the default counts make 58.7 MB.
  --no-pad              no description elements at all (about half the padded size)
  --pad-style S [text]  text: descriptions (long text, escaped or CDATA with HTML); elements: the
                        same bytes as many small unknown elements (PriceLevels/PriceLevel,
                        ArtistTopTracks/Track, VenueSections/Section: 2.1 M elements instead of
                        1.26 M at the default size, slower for every parser); mixed: either,
                        per record
  --shuffle             interleave the record types at random (events before their venues,
                        artists and categories) instead of categories, artists, venues, events
  --dupes N [0]         re-emit N events at the end of the events with a new status (upserts)
  --bad                 inject a known list of bad records (and a few near-miss controls that
                        must be accepted); the expected rejects are printed to stderr as JSON.
                        15 rejects: a Category, Artist, Venue and Event without ID, an Event with
                        ID="", an unknown venue, every performer unknown, bad dates 2026-02-30
                        and 11/22/2026, bad times 25:00 and 8pm, bad prices "twenty" and
                        "80.0.0", unknown statuses "available" and "sold-out". Kept: an event
                        with one known and one unknown performer, one without prices, one whose
                        artist and venue come last in the feed, an artist "BJORK" (folds to
                        Björk's name, so the affinity header "Björk" is ambiguous).
  --seed-quirks         wrap the CDATA of ArtistURL in <i>...</i> as the seed document shows it
                        (probably a PDF-extraction artefact; off by default, see feeds.md)
  --affinity FILE       also write the affinity feed for these artists ("Recommended artists for
                        NAME", then "RecArtistID,RecArtistName,Score" lines, then "-----")
  --affinity-artists N  how many artists get a block [0 = as many as make --affinity-mb]
  --affinity-mb X [11.1] size aimed at when --affinity-artists is 0
  --affinity-recs A-B [5-30] recommendations per block
  With --bad the affinity feed gets bad blocks/lines too (unknown name, ambiguous name, bad
  score, unknown ID), counted in the stderr summary.

stderr gets one JSON line: bytes, seconds, records per type (distinct IDs that must be kept),
and with --bad the expected rejects with their record labels, lines and reasons.
"""
import argparse
import bisect
import datetime
import json
import random
import sys
import time
import unicodedata

DEFAULT_COUNTS = {"Category": 75, "Artist": 20000, "Venue": 13700, "Event": 60000}
# Mean bytes per record that make the default feed the seed's 118.9 MB. Categories are not padded.
MEAN_BYTES = {"Artist": 900, "Venue": 1220, "Event": 1403}
SEED_MB = 118.9

# --------------------------------------------------------------------------------------------
# Categories: 5 top-level (no ParentCategory), 70 below them, a few three levels deep.
TOP_CATEGORIES = [(1, "Music"), (2, "Sports"), (3, "Arts & Theatre"), (4, "Family"), (5, "Miscellaneous")]
SUB_CATEGORIES = [  # (name, parent top id, parent sub name or None)
    ("Rock", 1, None), ("Pop", 1, None), ("Alternative", 1, None), ("Hip-Hop/Rap", 1, None),
    ("R&B", 1, None), ("Country", 1, None), ("Jazz & Blues", 1, None), ("Classical", 1, None),
    ("Metal", 1, None), ("Folk", 1, None), ("Latin", 1, None), ("Dance/Electronic", 1, None),
    ("World", 1, None), ("Reggae", 1, None), ("Religious", 1, None), ("New Age", 1, None),
    ("Punk", 1, None), ("Hard Rock", 1, "Rock"), ("Indie Rock", 1, "Rock"), ("Soul & Funk", 1, "R&B"),
    ("Singer-Songwriter", 1, "Folk"), ("Chanson & Schlager", 1, None),
    ("Música Regional Mexicana", 1, "Latin"), ("K-Pop", 1, "Pop"),
    ("Baseball", 2, None), ("Basketball", 2, None), ("Football", 2, None), ("Hockey", 2, None),
    ("Soccer", 2, None), ("Boxing", 2, None), ("Mixed Martial Arts", 2, None), ("Motorsports/Racing", 2, None),
    ("Golf", 2, None), ("Tennis", 2, None), ("Wrestling", 2, None), ("Rodeo", 2, None),
    ("Lacrosse", 2, None), ("Rugby", 2, None), ("Volleyball", 2, None), ("Equestrian", 2, None),
    ("Extreme Sports", 2, None), ("Cricket", 2, None), ("College Basketball", 2, "Basketball"),
    ("College Football", 2, "Football"), ("Figure Skating", 2, None), ("Cycling", 2, None),
    ("Theatre", 3, None), ("Musicals", 3, None), ("Broadway", 3, "Musicals"), ("Opera", 3, None),
    ("Ballet & Dance", 3, None), ("Comedy", 3, None), ("Magic & Illusion", 3, None), ("Spoken Word", 3, None),
    ("Cabaret", 3, None), ("Performance Art", 3, None), ("Children's Theatre", 3, "Theatre"),
    ("Circus", 4, None), ("Ice Shows", 4, None), ("Children's Music", 4, None),
    ("Fairs & Festivals", 4, None), ("Family Attractions", 4, None), ("Puppetry", 4, None),
    ("Lectures & Seminars", 5, None), ("Exhibitions", 5, None), ("Food & Drink", 5, None),
    ("Parking", 5, None), ("Tours & Attractions", 5, None), ("Holiday", 5, None),
    ("Gift Cards", 5, None), ("Fan Experiences", 5, None),
]
TOP_IMG = {1: "Music", 2: "Sports", 3: "Theatre", 4: "Family", 5: "Misc"}

# --------------------------------------------------------------------------------------------
# Cities: name, state, country, lat, lon, IANA zone, currency, zip kind, weight.
CITIES = [
    ("New York", "NY", "US", 40.7128, -74.0060, "America/New_York", "USD", "us:100", 8),
    ("Brooklyn", "NY", "US", 40.6782, -73.9442, "America/New_York", "USD", "us:112", 3),
    ("Los Angeles", "CA", "US", 34.0522, -118.2437, "America/Los_Angeles", "USD", "us:900", 7),
    ("San Francisco", "CA", "US", 37.7749, -122.4194, "America/Los_Angeles", "USD", "us:941", 4),
    ("Oakland", "CA", "US", 37.8044, -122.2712, "America/Los_Angeles", "USD", "us:946", 1),
    ("San Diego", "CA", "US", 32.7157, -117.1611, "America/Los_Angeles", "USD", "us:921", 2),
    ("Sacramento", "CA", "US", 38.5816, -121.4944, "America/Los_Angeles", "USD", "us:958", 1),
    ("Seattle", "WA", "US", 47.6062, -122.3321, "America/Los_Angeles", "USD", "us:981", 3),
    ("Portland", "OR", "US", 45.5152, -122.6784, "America/Los_Angeles", "USD", "us:972", 2),
    ("Las Vegas", "NV", "US", 36.1699, -115.1398, "America/Los_Angeles", "USD", "us:891", 3),
    ("Phoenix", "AZ", "US", 33.4484, -112.0740, "America/Phoenix", "USD", "us:850", 2),
    ("Tucson", "AZ", "US", 32.2226, -110.9747, "America/Phoenix", "USD", "us:857", 1),
    ("Denver", "CO", "US", 39.7392, -104.9903, "America/Denver", "USD", "us:802", 3),
    ("Salt Lake City", "UT", "US", 40.7608, -111.8910, "America/Denver", "USD", "us:841", 1),
    ("Albuquerque", "NM", "US", 35.0844, -106.6504, "America/Denver", "USD", "us:871", 1),
    ("Boise", "ID", "US", 43.6150, -116.2023, "America/Boise", "USD", "us:837", 1),
    ("El Paso", "TX", "US", 31.7619, -106.4850, "America/Denver", "USD", "us:799", 1),
    ("Chicago", "IL", "US", 41.8781, -87.6298, "America/Chicago", "USD", "us:606", 6),
    ("Houston", "TX", "US", 29.7604, -95.3698, "America/Chicago", "USD", "us:770", 4),
    ("Dallas", "TX", "US", 32.7767, -96.7970, "America/Chicago", "USD", "us:752", 4),
    ("Austin", "TX", "US", 30.2672, -97.7431, "America/Chicago", "USD", "us:787", 3),
    ("San Antonio", "TX", "US", 29.4241, -98.4936, "America/Chicago", "USD", "us:782", 2),
    ("Minneapolis", "MN", "US", 44.9778, -93.2650, "America/Chicago", "USD", "us:554", 2),
    ("Milwaukee", "WI", "US", 43.0389, -87.9065, "America/Chicago", "USD", "us:532", 1),
    ("St. Louis", "MO", "US", 38.6270, -90.1994, "America/Chicago", "USD", "us:631", 2),
    ("Kansas City", "MO", "US", 39.0997, -94.5786, "America/Chicago", "USD", "us:641", 1),
    ("Nashville", "TN", "US", 36.1627, -86.7816, "America/Chicago", "USD", "us:372", 3),
    ("Memphis", "TN", "US", 35.1495, -90.0490, "America/Chicago", "USD", "us:381", 1),
    ("New Orleans", "LA", "US", 29.9511, -90.0715, "America/Chicago", "USD", "us:701", 2),
    ("Oklahoma City", "OK", "US", 35.4676, -97.5164, "America/Chicago", "USD", "us:731", 1),
    ("Atlanta", "GA", "US", 33.7490, -84.3880, "America/New_York", "USD", "us:303", 4),
    ("Miami", "FL", "US", 25.7617, -80.1918, "America/New_York", "USD", "us:331", 3),
    ("Orlando", "FL", "US", 28.5383, -81.3792, "America/New_York", "USD", "us:328", 2),
    ("Tampa", "FL", "US", 27.9506, -82.4572, "America/New_York", "USD", "us:336", 2),
    ("Charlotte", "NC", "US", 35.2271, -80.8431, "America/New_York", "USD", "us:282", 2),
    ("Raleigh", "NC", "US", 35.7796, -78.6382, "America/New_York", "USD", "us:276", 1),
    ("Washington", "DC", "US", 38.9072, -77.0369, "America/New_York", "USD", "us:200", 3),
    ("Baltimore", "MD", "US", 39.2904, -76.6122, "America/New_York", "USD", "us:212", 1),
    ("Philadelphia", "PA", "US", 39.9526, -75.1652, "America/New_York", "USD", "us:191", 3),
    ("Pittsburgh", "PA", "US", 40.4406, -79.9959, "America/New_York", "USD", "us:152", 2),
    ("Boston", "MA", "US", 42.3601, -71.0589, "America/New_York", "USD", "us:021", 3),
    ("Providence", "RI", "US", 41.8240, -71.4128, "America/New_York", "USD", "us:029", 1),
    ("Hartford", "CT", "US", 41.7658, -72.6734, "America/New_York", "USD", "us:061", 1),
    ("Newark", "NJ", "US", 40.7357, -74.1724, "America/New_York", "USD", "us:071", 1),
    ("Detroit", "MI", "US", 42.3314, -83.0458, "America/Detroit", "USD", "us:482", 2),
    ("Cleveland", "OH", "US", 41.4993, -81.6944, "America/New_York", "USD", "us:441", 2),
    ("Columbus", "OH", "US", 39.9612, -82.9988, "America/New_York", "USD", "us:432", 1),
    ("Cincinnati", "OH", "US", 39.1031, -84.5120, "America/New_York", "USD", "us:452", 1),
    ("Indianapolis", "IN", "US", 39.7684, -86.1581, "America/Indiana/Indianapolis", "USD", "us:462", 1),
    ("Louisville", "KY", "US", 38.2527, -85.7585, "America/Kentucky/Louisville", "USD", "us:402", 1),
    ("Buffalo", "NY", "US", 42.8864, -78.8784, "America/New_York", "USD", "us:142", 1),
    ("Honolulu", "HI", "US", 21.3069, -157.8583, "Pacific/Honolulu", "USD", "us:968", 1),
    ("Anchorage", "AK", "US", 61.2181, -149.9003, "America/Anchorage", "USD", "us:995", 0.5),
    ("San Juan", "PR", "US", 18.4655, -66.1057, "America/Puerto_Rico", "USD", "us:009", 0.5),
    ("Toronto", "ON", "CA", 43.6532, -79.3832, "America/Toronto", "CAD", "ca:M", 3),
    ("Montréal", "QC", "CA", 45.5017, -73.5673, "America/Toronto", "CAD", "ca:H", 2),
    ("Vancouver", "BC", "CA", 49.2827, -123.1207, "America/Vancouver", "CAD", "ca:V", 2),
    ("Calgary", "AB", "CA", 51.0447, -114.0719, "America/Edmonton", "CAD", "ca:T", 1),
    ("Edmonton", "AB", "CA", 53.5461, -113.4938, "America/Edmonton", "CAD", "ca:T", 1),
    ("Winnipeg", "MB", "CA", 49.8951, -97.1384, "America/Winnipeg", "CAD", "ca:R", 0.5),
    ("Kamloops", "BC", "CA", 50.6745, -120.3273, "America/Vancouver", "CAD", "ca:V", 0.3),
    ("Halifax", "NS", "CA", 44.6488, -63.5752, "America/Halifax", "CAD", "ca:B", 0.5),
    ("St. John's", "NL", "CA", 47.5615, -52.7126, "America/St_Johns", "CAD", "ca:A", 0.2),
    ("Regina", "SK", "CA", 50.4452, -104.6189, "America/Regina", "CAD", "ca:S", 0.2),
    ("Ciudad de México", "CDMX", "MX", 19.4326, -99.1332, "America/Mexico_City", "MXN", "d5:0", 1),
    ("Monterrey", "NL", "MX", 25.6866, -100.3161, "America/Monterrey", "MXN", "d5:6", 0.5),
    ("Tijuana", "BC", "MX", 32.5149, -117.0382, "America/Tijuana", "MXN", "d5:2", 0.3),
    ("London", "England", "GB", 51.5074, -0.1278, "Europe/London", "GBP", "uk:N1,NW1,SE1,W1D,EC2A,E1,SW9", 3),
    ("Manchester", "England", "GB", 53.4808, -2.2426, "Europe/London", "GBP", "uk:M1,M3,M4", 1),
    ("Birmingham", "England", "GB", 52.4862, -1.8904, "Europe/London", "GBP", "uk:B1,B4,B5", 0.7),
    ("Glasgow", "Scotland", "GB", 55.8642, -4.2518, "Europe/London", "GBP", "uk:G1,G2,G3", 0.7),
    ("Dublin", "", "IE", 53.3498, -6.2603, "Europe/Dublin", "EUR", "uk:D01,D02,D08", 0.7),
    ("Amsterdam", "Noord-Holland", "NL", 52.3676, 4.9041, "Europe/Amsterdam", "EUR", "nl:10", 1),
    ("Berlin", "Berlin", "DE", 52.5200, 13.4050, "Europe/Berlin", "EUR", "d5:1", 1),
    ("München", "Bayern", "DE", 48.1351, 11.5820, "Europe/Berlin", "EUR", "d5:8", 0.6),
    ("Köln", "Nordrhein-Westfalen", "DE", 50.9375, 6.9603, "Europe/Berlin", "EUR", "d5:5", 0.5),
    ("Hamburg", "", "DE", 53.5511, 9.9937, "Europe/Berlin", "EUR", "d5:2", 0.5),
    ("Paris", "Île-de-France", "FR", 48.8566, 2.3522, "Europe/Paris", "EUR", "d5:75", 1.2),
    ("Lyon", "", "FR", 45.7640, 4.8357, "Europe/Paris", "EUR", "d5:69", 0.4),
    ("Madrid", "", "ES", 40.4168, -3.7038, "Europe/Madrid", "EUR", "d5:28", 0.7),
    ("Barcelona", "Catalunya", "ES", 41.3874, 2.1686, "Europe/Madrid", "EUR", "d5:08", 0.7),
    ("Lisboa", "", "PT", 38.7223, -9.1393, "Europe/Lisbon", "EUR", "pt:1", 0.4),
    ("Milano", "Lombardia", "IT", 45.4642, 9.1900, "Europe/Rome", "EUR", "d5:20", 0.5),
    ("Roma", "", "IT", 41.9028, 12.4964, "Europe/Rome", "EUR", "d5:00", 0.4),
    ("Wien", "", "AT", 48.2082, 16.3738, "Europe/Vienna", "EUR", "d4:1", 0.5),
    ("Zürich", "ZH", "CH", 47.3769, 8.5417, "Europe/Zurich", "CHF", "d4:8", 0.4),
    ("Bruxelles", "", "BE", 50.8503, 4.3517, "Europe/Brussels", "EUR", "d4:1", 0.4),
    ("Praha", "", "CZ", 50.0755, 14.4378, "Europe/Prague", "CZK", "se:1", 0.3),
    ("Warszawa", "mazowieckie", "PL", 52.2297, 21.0122, "Europe/Warsaw", "PLN", "pl:0", 0.3),
    ("København", "", "DK", 55.6761, 12.5683, "Europe/Copenhagen", "DKK", "d4:1", 0.4),
    ("Stockholm", "", "SE", 59.3293, 18.0686, "Europe/Stockholm", "SEK", "se:1", 0.5),
    ("Malmö", "", "SE", 55.6050, 13.0038, "Europe/Stockholm", "SEK", "se:2", 0.2),
    ("Göteborg", "", "SE", 57.7089, 11.9746, "Europe/Stockholm", "SEK", "se:4", 0.2),
    ("Oslo", "", "NO", 59.9139, 10.7522, "Europe/Oslo", "NOK", "d4:0", 0.4),
    ("Helsinki", "", "FI", 60.1699, 24.9384, "Europe/Helsinki", "EUR", "d5:00", 0.3),
    ("Reykjavík", "", "IS", 64.1466, -21.9426, "Atlantic/Reykjavik", "ISK", "d3:1", 0.1),
    ("Athína", "", "GR", 37.9838, 23.7275, "Europe/Athens", "EUR", "se:1", 0.2),
    ("Sydney", "NSW", "AU", -33.8688, 151.2093, "Australia/Sydney", "AUD", "d4:2", 0.5),
    ("Melbourne", "VIC", "AU", -37.8136, 144.9631, "Australia/Melbourne", "AUD", "d4:3", 0.4),
    ("Auckland", "", "NZ", -36.8485, 174.7633, "Pacific/Auckland", "NZD", "d4:1", 0.2),
]

US_STREETS = ["Main St", "Market St", "Broadway", "Divisadero St", "5th Ave", "W 34th St", "Sunset Blvd",
              "Elm St", "Mission St", "Congress Ave", "Peachtree St NE", "Lake Shore Dr", "Commerce St",
              "E 6th St", "N Halsted St", "Bowery", "Fillmore St", "S Lamar Blvd", "Beale St", "Bourbon St",
              "Rainier Ave S", "Colfax Ave", "Pennsylvania Ave NW", "Boylston St", "Woodward Ave",
              "Euclid Ave", "Tremont St", "Hollywood Blvd", "Las Vegas Blvd S", "Washington Ave",
              "Ocean Dr", "Canal St", "King St W", "Rue Sainte-Catherine O", "Granville St", "MLK Jr Blvd"]
EU_STREETS = {
    "DE": ["Schönhauser Allee", "Warschauer Straße", "Kurfürstendamm", "Reeperbahn", "Maximilianstraße",
           "Große Freiheit", "Mühlenstraße", "Am Ostbahnhof", "Köpenicker Straße"],
    "FR": ["Rue de la Roquette", "Boulevard des Capucines", "Rue du Faubourg Saint-Martin",
           "Avenue Jean Jaurès", "Quai de Bercy", "Rue de Rivoli", "Boulevard de Clichy"],
    "ES": ["Calle de Alcalá", "Carrer de Balmes", "Gran Vía", "Calle de la Princesa", "Passeig de Gràcia"],
    "IT": ["Via Tortona", "Viale Pasubio", "Via Nazionale", "Corso Garibaldi"],
    "NL": ["Weteringschans", "Leidseplein", "Oostelijke Handelskade", "Prins Hendrikkade"],
    "SE": ["Götgatan", "Sveavägen", "Södra Förstadsgatan", "Kungsgatan"],
    "DK": ["Vesterbrogade", "Nørre Allé", "Enghavevej"],
    "NO": ["Karl Johans gate", "Grønland", "Kirkegata"],
    "AT": ["Mariahilfer Straße", "Währinger Gürtel", "Gürtel"],
    "CH": ["Limmatstrasse", "Hardstrasse", "Langstrasse"],
    "PL": ["ulica Marszałkowska", "Aleje Jerozolimskie", "ulica Żelazna"],
    "CZ": ["Václavské náměstí", "Národní", "Vinohradská"],
    "PT": ["Rua Garrett", "Avenida da Liberdade", "Rua da Rosa"],
    "BE": ["Rue de la Loi", "Boulevard Anspach", "Chaussée de Wavre"],
    "GR": ["Odos Ermou", "Leoforos Syngrou"],
    "IS": ["Laugavegur", "Hverfisgata"],
    "FI": ["Mannerheimintie", "Hämeentie"],
}
GB_STREETS = ["Camden High St", "Oxford Rd", "Brixton Rd", "Charing Cross Rd", "Sauchiehall St",
              "Digbeth High St", "Temple Bar", "Wardour St", "Whitworth St W"]
VENUE_WORDS = ["Fillmore", "Independent", "Troubadour", "Paradiso", "Echo", "Roxy", "Orpheum", "Palace",
               "Majestic", "Apollo", "Electric", "Bluebird", "Crescent", "Harbor", "Lantern", "Bowery",
               "Granada", "Tivoli", "Empire", "Odeon", "Capitol", "Mercury", "Velvet", "Anchor", "Beacon",
               "Riviera", "Wiltern", "Paramount", "Rialto", "Sirius", "Union", "Pioneer", "Summit",
               "Magnolia", "Cypress", "Gorge", "Foundry", "Warehouse", "Lighthouse", "Cathedral"]
VENUE_KINDS = ["Theatre", "Theater", "Ballroom", "Music Hall", "Arena", "Amphitheatre", "Stadium", "Club",
               "Hall", "Lounge", "Pavilion", "Center", "Centre", "Auditorium", "Opera House", "Field",
               "Coliseum", "Bowl", "Room", "Social Club"]
BRANDS = ["Acme", "Summit Bank", "Crystal Cola", "Northwind", "Bluewave", "Redline Motors", "Evergreen Credit Union",
          "Globex", "Initech", "Hooli", "Vandelay", "Soylent", "Umbrella Insurance", "Stark", "Wayne"]
FIRST = ["Celia", "James", "Maria", "John", "Aisha", "Chen", "Olivia", "Liam", "Noah", "Emma", "Zoë", "Chloé",
         "José", "André", "Søren", "Łukasz", "François", "Björn", "Ólafur", "Iñaki", "Renée", "Anaïs", "Jürgen",
         "Mateo", "Sofía", "Dmitri", "Yuki", "Kwame", "Priya", "Nadia", "Elena", "Marcus", "Hannah", "Lucas",
         "Amara", "Tomás", "Ines", "Ruth", "Kenji", "Fatima", "Grace", "Hugo", "Ivy", "Jack", "Kai", "Leah",
         "Mila", "Nils", "Oscar", "Pia", "Quinn", "Rosa", "Sam", "Tess", "Uma", "Victor", "Wren", "Xavier",
         "Yara", "Zack", "Dolores", "Eamon", "Siobhán", "Ciarán", "Małgorzata", "Göran", "Åsa", "Øystein"]
LAST = ["Games", "Smith", "García", "Müller", "Núñez", "Ibáñez", "Dvořák", "Šimić", "O'Connor", "Jóhannsdóttir",
        "Nakamura", "Okafor", "Patel", "Kowalski", "Rossi", "Dubois", "Lindqvist", "Hansen", "Novák", "Costa",
        "Brown", "Taylor", "Wilson", "Martin", "Lee", "Walker", "Hall", "Young", "King", "Wright", "Lopez",
        "Hill", "Scott", "Green", "Adams", "Baker", "Nelson", "Carter", "Mitchell", "Perez", "Roberts",
        "Turner", "Phillips", "Campbell", "Parker", "Evans", "Edwards", "Collins", "Stewart", "Sánchez",
        "Morris", "Rogers", "Reed", "Cook", "Morgan", "Bell", "Murphy", "Bailey", "Rivera", "Cooper",
        "Richardson", "Cox", "Howard", "Ward", "Torres", "Peterson", "Gray", "Ramírez", "James", "Watson",
        "Brooks", "Kelly", "Sanders", "Price", "Bennett", "Wood", "Barnes", "Ross", "Henderson", "Coleman",
        "Jenkins", "Perry", "Powell", "Long", "Patterson", "Hughes", "Flores", "Washington", "Butler",
        "Simmons", "Foster", "Gonzáles", "Bryant", "Alexander", "Russell", "Griffin", "Díaz", "Hayes",
        "Søndergaard", "Ångström", "Wójcik", "Çelik", "Öztürk", "Papadopoulos", "Leblanc", "Gauthier"]
ADJ = ["Velvet", "Electric", "Silver", "Broken", "Hollow", "Golden", "Midnight", "Neon", "Wild", "Quiet",
       "Crimson", "Paper", "Iron", "Glass", "Lonesome", "Cosmic", "Savage", "Gentle", "Burning", "Frozen",
       "Lucky", "Sonic", "Rusty", "Hidden", "Northern", "Southern", "Little", "Big", "Modern", "Ancient",
       "Dead", "Wandering", "Honey", "Thunder", "Atomic", "Royal", "Secret", "Blue", "Black", "Scarlet"]
NOUN = ["Foxes", "Wolves", "Owls", "Lanterns", "Rivers", "Ghosts", "Pilots", "Kings", "Queens", "Daughters",
        "Sons", "Horses", "Machines", "Hearts", "Saints", "Strangers", "Echoes", "Mountains", "Tigers",
        "Shadows", "Satellites", "Sparrows", "Bandits", "Drifters", "Dreamers", "Monks", "Sisters",
        "Brothers", "Wires", "Comets", "Lions", "Crows", "Giants", "Vandals", "Poets", "Rebels"]
SING = ["Fox", "Wolf", "Owl", "Lantern", "River", "Ghost", "Pilot", "Crown", "Horse", "Machine", "Heart",
        "Saint", "Echo", "Mountain", "Tiger", "Shadow", "Satellite", "Sparrow", "Comet", "Lion", "Crow",
        "Giant", "Harbor", "Canyon", "Engine", "Garden", "Mirror", "Orchid", "Prairie", "Tundra"]
MASCOTS = ["Thunderbirds", "Hitmen", "Blazers", "Mariners", "Rangers", "Storm", "Wildcats", "Bulldogs",
           "Huskies", "Golden Bears", "Knights", "Falcons", "Rockets", "Grizzlies", "Sharks", "Sounders FC",
           "Hornets", "Mustangs", "Outlaws", "Pioneers", "Cougars", "Comets", "Express", "Aces"]
COLLEGES = ["CSUN", "San Francisco", "Washington", "California", "Gonzaga", "Creighton", "Villanova", "Duke",
            "Marquette", "Oregon", "Arizona", "Texas", "Michigan", "Boise State", "Saint Mary's", "UConn"]
SHOWS = ["The {a} {s}", "{a} {s}: The Musical", "The {s} of {c}", "A {a} Night in {c}", "{s} on Ice",
         "The Legend of the {a} {s}", "{c} Nutcracker", "{a} Circus", "The {a} {s} Comedy Hour"]
TOURS = ["Winter Tour", "World Tour", "Farewell Tour", "North American Tour", "Reunion Tour", "Acoustic Tour",
         "Greatest Hits Tour", "Live", "Unplugged", "Anniversary Tour", "European Tour 2026", "Holiday Spectacular"]
PROMOTERS = ["Live Nation", "AEG Presents", "Goldenvoice", "Another Planet Entertainment", "Bowery Presents",
             "Frank Productions", "MCD Productions", "FKP Scorpio", "Mojo Concerts", "Gérard Drouot Productions"]

# Real-world names that exercise accents, non-Latin scripts, commas, ampersands, quotes, "<", ")".
FAMOUS = [  # (name, category name)
    ("Beyoncé", "Pop"), ("Sigur Rós", "Alternative"), ("Motörhead", "Metal"), ("Björk", "Alternative"),
    ("Mötley Crüe", "Metal"), ("Blue Öyster Cult", "Rock"), ("Queensrÿche", "Metal"), ("Hüsker Dü", "Punk"),
    ("Röyksopp", "Dance/Electronic"), ("Mø", "Pop"), ("Jóhann Jóhannsson", "Classical"), ("Amadou & Mariam", "World"),
    ("Earth, Wind & Fire", "Soul & Funk"), ("Crosby, Stills, Nash & Young", "Folk"), ("Tyler, the Creator", "Hip-Hop/Rap"),
    ("Emerson, Lake & Palmer", "Rock"), ("Peter Bjorn and John", "Alternative"), ("Blood, Sweat & Tears", "Jazz & Blues"),
    ("Simon & Garfunkel", "Folk"), ("Hall & Oates", "Pop"), ("Florence + the Machine", "Alternative"),
    ("Guns N' Roses", "Hard Rock"), ("AC/DC", "Hard Rock"), ("P!nk", "Pop"), ("Sinéad O'Connor", "Folk"),
    ("Céline Dion", "Pop"), ("Michael Bublé", "Jazz & Blues"), ("Zoë Keating", "Classical"),
    ("Los Tigres del Norte", "Música Regional Mexicana"), ("Maná", "Latin"), ("Café Tacvba", "Latin"), ("Rosalía", "Latin"),
    ("Ólafur Arnalds", "Classical"), ("Múm", "Alternative"), ("Die Ärzte", "Punk"), ("Die Toten Hosen", "Punk"),
    ("Stromae", "Dance/Electronic"), ("Angèle", "Pop"), ("Zaz", "Chanson & Schlager"), ("Ludovico Einaudi", "Classical"),
    ("Yann Tiersen", "Classical"), ("Goran Bregović", "World"), ("Emir Kusturica & The No Smoking Orchestra", "World"),
    ("Čechomor", "Folk"), ("坂本龍一 (Ryuichi Sakamoto)", "Classical"), ("BTS (방탄소년단)", "K-Pop"),
    ("Кино — tribute", "Rock"), ("Μίκης Θεοδωράκης Tribute", "World"), ("Tinariwen", "World"),
    ("Ibrahim Maalouf", "Jazz & Blues"), ("Sunn O)))", "Metal"), ("!!! (Chk Chk Chk)", "Dance/Electronic"),
    ("\"Weird Al\" Yankovic", "Comedy"), ("I <3 the 90s Tour", "Pop"), ("🎻 Strings & Things", "Classical"),
    ("Battle At the Boat", "Boxing"), ("Showtime Boxing", "Boxing"), ("Guns N Hoses Charity Boxing Event", "Boxing"),
    ("Live Boxing", "Boxing"), ("MMA - Mixed Martial Arts", "Mixed Martial Arts"), ("Seattle Mariners", "Baseball"),
    ("Seattle Seahawks", "Football"), ("Seattle Thunderbirds", "Hockey"), ("Seattle Sounders FC", "Soccer"),
    ("Calgary Hitmen", "Hockey"), ("Kamloops Blazers", "Hockey"), ("Texas Rangers", "Baseball"), ("Carl Froch", "Boxing"),
    ("Montréal Canadiens", "Hockey"), ("Cirque du Soleil – Kooza", "Circus"), ("Les Misérables", "Broadway"),
    ("Disney On Ice: Frozen & Encanto", "Ice Shows"), ("Harlem Globetrotters", "Basketball"), ("Celia Games", "Rock"),
    ("St. Madness", "Metal"), ("Ugurau", "World"),
]

PAD_SENTENCES = {
    "Artist": [
        "{N} formed in {C} and spent years playing small clubs before a breakout record.",
        "Known for a high-energy live show & a devoted following, {N} returns with new songs.",
        "The band's sound blends {g1} and {g2} with a touch of {g3}.",
        "Critics called the latest album \"a triumph of restraint & volume\".",
        "Members past and present include players from {C}, {C2} and beyond.",
        "Expect a career-spanning set with fan favourites and deep cuts.",
        "Their third album went gold in three countries; the fourth is due next spring.",
        "Support slots with some of the biggest names in {g1} brought them to arenas.",
        "Tickets for previous tours sold out within minutes &#8212; don't wait.",
        "{N} has won two awards for Best Live Act and was nominated for a third.",
        "Born in {C}, the artist grew up on {g1} records and church choirs.",
        "Their songs have been streamed more than 400 million times worldwide.",
    ],
    "Venue": [
        "Doors open one hour before showtime unless otherwise noted.",
        "Parking is available in the garage at 5th & Main; rideshare drop-off is on the north side.",
        "The venue is fully accessible; wheelchair seating can be booked with the box office.",
        "Bags larger than 12\" x 6\" x 12\" are not permitted; clear bags are encouraged.",
        "Built in 1927 as a movie palace, the hall was restored in 2009 & seats 2,300.",
        "Public transit: take the Metro to {C} Central, then walk four blocks east.",
        "Food & beverage: the bar opens with the doors; outside food is not allowed.",
        "All guests need a ticket, including infants over 24 months.",
        "The box office is open Monday–Friday 10:00–18:00 and two hours before events.",
        "Re-entry is not permitted. Smoking (including e-cigarettes) is prohibited.",
        "Lockers are available on the lower level for a small fee.",
        "Ticket holders under 16 must be accompanied by an adult.",
    ],
    "Event": [
        "Please note: this event is all ages; ID is required to purchase alcohol.",
        "Ticket limit: 8 per household. Orders exceeding the limit may be cancelled without notice.",
        "Prices include taxes & fees; an order processing fee applies at checkout.",
        "VIP packages include early entry, a limited poster & merchandise bundle.",
        "Mobile entry only &#8212; screenshots will not be accepted.",
        "The performer and venue reserve the right to change the running order.",
        "Special guests to be announced. Program subject to change.",
        "Wheelchair-accessible seats can be purchased online or by phone.",
        "This is a standing general-admission show; the balcony is reserved seating.",
        "Doors 19:00 &#8211; show 20:00 &#8211; curfew 23:00.",
        "Strobe lighting & haze will be used during this performance.",
        "Presale for fan-club members starts two days before the general on-sale.",
    ],
}
GENRES = ["rock", "soul", "jazz", "folk", "electronica", "hip-hop", "country", "blues", "punk", "metal",
          "bossa nova", "chanson", "cumbia", "afrobeat", "gospel", "ambient", "synth-pop", "bluegrass"]


def xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fold(name):
    """What the affinity feed resolves names by: case- and accent-insensitive."""
    d = unicodedata.normalize("NFKD", name)
    return " ".join("".join(c for c in d if not unicodedata.combining(c)).casefold().split())


TRANSLIT = str.maketrans({"ø": "o", "Ø": "O", "ß": "ss", "æ": "ae", "Æ": "AE", "ł": "l", "Ł": "L", "đ": "d", "ð": "d", "þ": "th"})


def slug(name):
    d = unicodedata.normalize("NFKD", name.translate(TRANSLIT))
    out = []
    for c in d:
        if c.isascii() and c.isalnum():
            out.append(c)
        elif c in " -/&,+" and out and out[-1] != "-":
            out.append("-")
    s = "".join(out).strip("-")
    return s or "artist"


class Pool:
    """A few hundred KB of description text; descriptions are slices cut at spaces."""

    def __init__(self, rng, kind, size, cities):
        sent = PAD_SENTENCES[kind]
        parts_esc, parts_raw = [], []
        n = 0
        while n < size:
            s = rng.choice(sent).format(
                N=rng.choice(FIRST) + " " + rng.choice(LAST), C=rng.choice(cities)[0],
                C2=rng.choice(cities)[0], g1=rng.choice(GENRES), g2=rng.choice(GENRES), g3=rng.choice(GENRES))
            raw = s.replace("&#8212;", "—").replace("&#8211;", "–")
            esc = s.replace("&", "&amp;").replace("&amp;#", "&#").replace("<", "&lt;").replace(">", "&gt;")
            r = rng.random()
            if r < 0.08:
                esc += "\n"
                raw = raw + "</p>\n<p>"
            elif r < 0.12:
                raw = "<b>" + raw + "</b><br/>"
            parts_esc.append(esc)
            parts_raw.append(raw)
            n += len(s) + 1
        self.esc = " ".join(parts_esc) + " "
        self.raw = " ".join(parts_raw) + " "
        assert "]]>" not in self.raw
        self.starts = {}
        for key, src in ((False, self.esc), (True, self.raw)):
            st, i = [0], src.find(". ")
            while i >= 0:
                st.append(i + 2)
                i = src.find(". ", i + 2)
            self.starts[key] = st

    def text(self, rng, length, raw):
        """About `length` characters from a sentence start, cut at a sentence end (else a space)."""
        src = self.raw if raw else self.esc
        length = min(length, len(src) // 2)
        starts = self.starts[raw]
        hi = bisect.bisect_left(starts, len(src) - length - 2)
        start = starts[rng.randrange(max(1, hi))]
        end = src.rfind(". ", start + length // 2, start + length)
        if end > 0:
            end += 1
        else:
            end = src.rfind(" ", start, start + length)
            if end <= start:
                end = src.find(" ", start + 1)
        return src[start:end]


class Padder:
    """Sizes each record's description so that every type averages its byte budget."""

    def __init__(self, count, mean, enabled):
        self.budget = count * mean
        self.left = count
        self.written = 0
        self.enabled = enabled and mean > 0

    def want(self, rng, base_len):
        if not self.enabled or self.left <= 0:
            return 0
        w = (self.budget - self.written) / self.left - base_len - 40
        if w < 30 or rng.random() < 0.12:
            return 0
        return int(w * rng.uniform(0.35, 1.65))

    def wrote(self, n, counted=True):
        self.written += n
        if counted:
            self.left -= 1


# --------------------------------------------------------------------------------------------
def build_categories(n):
    cats = [(cid, name, None) for cid, name in TOP_CATEGORIES][:max(1, min(n, 5))]
    by_name = {}
    cid = 10
    i = 0
    while len(cats) < n:
        if i < len(SUB_CATEGORIES):
            name, top, parent_name = SUB_CATEGORIES[i]
        else:
            top = TOP_CATEGORIES[i % 5][0]
            name, parent_name = "%s Special %d" % (TOP_CATEGORIES[i % 5][1], i), None
        i += 1
        if top > len([c for c in cats if c[2] is None]):
            continue
        parent = by_name.get(parent_name, top)
        cats.append((cid, name, parent))
        by_name[name] = cid
        cid += 1
    return cats  # (id, name, parent id or None)


def top_of(cats_by_id, cid):
    while cats_by_id[cid][2] is not None:
        cid = cats_by_id[cid][2]
    return cid


def build_artists(rng, n, cats):
    """[(id, name, [category ids], top id)] with names unique after fold()."""
    cats_by_id = {c[0]: c for c in cats}
    cat_by_name = {c[1]: c[0] for c in cats}
    subs_by_top = {}
    for c in cats:
        if c[2] is not None:
            subs_by_top.setdefault(top_of(cats_by_id, c[0]), []).append(c[0])
    tops = [c[0] for c in cats if c[2] is None]
    top_w = {1: 62, 2: 18, 3: 12, 4: 5, 5: 3}
    out = []
    ids = sorted(rng.sample(range(700000, 1900000), n))
    famous = list(FAMOUS)
    rng.shuffle(famous)
    famous = famous[:n]
    fam_slots = set(rng.sample(range(n), len(famous)))
    seen = {fold(f[0]) for f in famous}  # generated names never collide with them

    def pick_cat(top):
        subs = subs_by_top.get(top)
        return rng.choice(subs) if subs else top

    for i in range(n):
        name = None
        if i in fam_slots and famous:
            name, cat_name = famous.pop()
            cat = cat_by_name.get(cat_name, tops[0])
            top = top_of(cats_by_id, cat)
        else:
            top = rng.choices(tops, [top_w.get(t, 1) for t in tops])[0]
            cat = pick_cat(top)
            for _ in range(50):
                name = gen_name(rng, top)
                if fold(name) not in seen:
                    break
            else:
                name = "%s %d" % (name, i)
            seen.add(fold(name))
        catlist = [cat]
        r = rng.random()
        if r < 0.18 and cat != top:
            catlist.append(top)  # the seed lists top-level "1" as an artist category too
        elif r < 0.27:
            other = pick_cat(top)
            if other not in catlist:
                catlist.append(other)
            if r < 0.30 and top not in catlist:
                catlist.append(top)
        out.append((ids[i], name, catlist, top))
    # the seed's order: roughly ascending IDs, locally out of order
    for i in range(0, n - 3, 3):
        if rng.random() < 0.5:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def gen_name(rng, top):
    r = rng.random()
    if top == 2:  # sports
        if r < 0.55:
            return "%s %s" % (rng.choice(CITIES)[0], rng.choice(MASCOTS))
        if r < 0.85:
            return "%s %s %s" % (rng.choice(COLLEGES), rng.choice(["Mens", "Womens", "Men's", "Women's"]),
                                 rng.choice(["Basketball", "Hockey", "Volleyball", "Soccer", "Football"]))
        return "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
    if top in (3, 4):
        if r < 0.6:
            return rng.choice(SHOWS).format(a=rng.choice(ADJ), s=rng.choice(SING), c=rng.choice(CITIES)[0])
        if r < 0.85:
            return "%s %s%s" % (rng.choice(FIRST), rng.choice(LAST),
                                rng.choice(["", ": Live", " – Stand-Up", ", Comedian", " & Friends"]))
    if r < 0.32:
        return "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
    if r < 0.52:
        return "The %s %s" % (rng.choice(ADJ), rng.choice(NOUN))
    if r < 0.64:
        return "%s %s" % (rng.choice(ADJ), rng.choice(SING))
    if r < 0.74:
        return "%s %s & the %s" % (rng.choice(FIRST), rng.choice(LAST), rng.choice(NOUN))
    if r < 0.80:
        return "%s, %s & %s" % (rng.choice(LAST), rng.choice(LAST), rng.choice(LAST))
    if r < 0.84:
        return "%s, the %s" % (rng.choice(FIRST), rng.choice(SING))
    if r < 0.92:
        return "%s %s %s" % (rng.choice(FIRST), rng.choice(LAST),
                             rng.choice(["Trio", "Quartet", "Band", "Orchestra", "Ensemble", "Project", "Collective"]))
    return "%s%s" % (rng.choice(SING), rng.choice(["s", " Club", " Society", " Parade", "land", " Motel"]))


def gen_zip(rng, kind):
    k, _, arg = kind.partition(":")
    d = lambda n: "".join(rng.choice("0123456789") for _ in range(n))
    L = lambda: rng.choice("ABCEGHJKLMNPRSTVXY")
    if k == "us":
        return arg + d(2)
    if k == "ca":
        return "%s%s%s %s%s%s" % (arg, d(1), L(), d(1), L(), d(1))
    if k == "uk":
        return "%s %s%s%s" % (rng.choice(arg.split(",")), d(1), L(), L())
    if k == "nl":
        return "%s%s %s%s" % (arg, d(2), L(), L())
    if k == "se":
        return "%s%s %s" % (arg, d(2), d(2))
    if k == "pt":
        return "%s%s-%s" % (arg, d(3), d(3))
    if k == "pl":
        return "%s%s-%s" % (arg, d(1), d(3))
    n = int(k[1])
    return arg + d(n - len(arg))


def build_venues(rng, n):
    """[(id, name, street, city, state, zip, lat, lon, tz, currency)] lat/lon/tz may be None."""
    weights = [c[8] for c in CITIES]
    ids = sorted(rng.sample(range(1000, 400000), n))
    out = []
    for i in range(n):
        c = rng.choices(CITIES, weights)[0]
        city, state, country, lat, lon, tz, cur, zk, _ = c
        r = rng.random()
        w = rng.choice(VENUE_WORDS)
        if country == "FR" and r < 0.5:
            name = rng.choice(["Théâtre du %s", "La Salle %s", "Le %s", "L'Olympia %s"]) % w
        elif country == "DE" and r < 0.5:
            name = rng.choice(["%shalle", "Columbiahalle %s", "Zentrum %s", "%s Kulturbühne"]) % w
        elif country in ("ES", "MX") and r < 0.5:
            name = rng.choice(["Sala %s", "Teatro %s", "Auditorio %s", "Palacio de los Deportes %s"]) % w
        elif r < 0.30:
            name = "The %s %s" % (w, rng.choice(VENUE_KINDS))
        elif r < 0.50:
            name = "%s %s" % (w, rng.choice(VENUE_KINDS))
        elif r < 0.62:
            name = "%s %s" % (rng.choice(BRANDS), rng.choice(["Arena", "Center", "Amphitheatre", "Stadium", "Pavilion", "Field"]))
        elif r < 0.72:
            name = "%s Civic %s" % (city, rng.choice(["Center", "Auditorium", "Theatre"]))
        elif r < 0.80:
            name = "%s & %s %s" % (w, rng.choice(VENUE_WORDS), rng.choice(["Saloon", "Tavern", "Hall", "Room"]))
        elif r < 0.88:
            name = "%s %s" % (rng.choice(LAST), rng.choice(["Hall", "Stadium", "Field", "Park", "Arena"]))
        else:
            name = "%s %s – %s" % (w, rng.choice(VENUE_KINDS), rng.choice(["Main Stage", "Upstairs", "Lounge", "Outdoor Stage", "Studio"]))
        num = rng.randrange(1, 9999) if rng.random() < 0.8 else rng.randrange(1, 300)
        if country in ("US", "CA", "MX", "AU", "NZ"):
            street = "%d %s" % (num, rng.choice(US_STREETS))
        elif country in ("GB", "IE"):
            street = "%d %s" % (num % 400 + 1, rng.choice(GB_STREETS))
        elif country == "FR":
            street = "%d %s" % (num % 200 + 1, rng.choice(EU_STREETS["FR"]))
        elif country == "ES":
            street = "%s, %d" % (rng.choice(EU_STREETS["ES"]), num % 200 + 1)
        else:
            street = "%s %d" % (rng.choice(EU_STREETS.get(country, EU_STREETS["DE"])), num % 200 + 1)
        if rng.random() < 0.07:
            vlat = vlon = None
        else:
            vlat = lat + rng.uniform(-0.12, 0.12)
            vlon = lon + rng.uniform(-0.15, 0.15)
        vtz = None if rng.random() < 0.02 else tz
        if country not in ("US", "CA", "MX", "AU") and rng.random() < 0.3:
            state = ""
        out.append((ids[i], name, street, city, state, gen_zip(rng, zk), vlat, vlon, vtz, cur))
    return out


PRICE_LEVELS = ["GA Floor", "General Admission", "Lower Bowl", "Upper Bowl", "Balcony", "Mezzanine", "Orchestra",
                "Club Level", "VIP Meet & Greet", "Premium Box", "Standing – Front of Stage", "Reserved Seating",
                "Parterre", "Loge", "Rang 1", "Tribüne Süd", "Pelouse", "Fosse", "Platea", "Accessible Seating"]


def item_pools(rng):
    """Small unknown elements for --pad-style elements: (open tag, [items], close tag) per type."""
    ev = []
    for i in range(3000):
        mn = rng.randrange(10, 400) + rng.choice([0, 0.5, 0.95])
        ev.append('<PriceLevel ID="%d" Name="%s" Min="%.2f" Max="%.2f" Fees="%.2f" Available="%s" />\n'
                  % (rng.randrange(1, 60), xml_escape(rng.choice(PRICE_LEVELS)), mn, mn * rng.uniform(1, 2.5),
                     mn * 0.12, rng.choice(["true", "false"])))
    ar = []
    for i in range(3000):
        ar.append('<Track Rank="%d"><Title>%s %s</Title><Plays>%d</Plays></Track>\n'
                  % (rng.randrange(1, 20), rng.choice(ADJ), rng.choice(SING + NOUN), rng.randrange(10**3, 10**8)))
    ve = []
    for i in range(3000):
        ve.append('<Section ID="%d" Name="%s %d" Capacity="%d" Accessible="%s" />\n'
                  % (rng.randrange(1, 500), xml_escape(rng.choice(PRICE_LEVELS)), rng.randrange(100, 400),
                     rng.randrange(20, 5000), rng.choice(["yes", "no"])))
    return {"Event": ("<PriceLevels>\n", ev, "</PriceLevels>\n"),
            "Artist": ("<ArtistTopTracks>\n", ar, "</ArtistTopTracks>\n"),
            "Venue": ("<VenueSections>\n", ve, "</VenueSections>\n")}


# --------------------------------------------------------------------------------------------
class Feed:
    def __init__(self, args):
        self.a = args
        base = random.Random("gen-feed:%d" % args.seed)
        self.rng_names = random.Random("names:%d" % args.seed)
        self.cats = build_categories(args.categories)
        self.cats_by_id = {c[0]: c for c in self.cats}
        self.artists = build_artists(self.rng_names, args.artists, self.cats)
        self.venues = build_venues(random.Random("venues:%d" % args.seed), args.venues)
        self.rng = base
        self.start = datetime.date.fromisoformat(args.start_date)
        counts = {"Artist": args.artists, "Venue": args.venues, "Event": args.events}
        if args.size_mb is not None:
            default_total = sum(counts[t] * MEAN_BYTES[t] for t in counts)
            scale = args.size_mb * 1e6 / default_total if default_total else 1
        else:
            scale = 1.0
        self.pad = {t: Padder(counts[t], MEAN_BYTES[t] * scale, not args.no_pad) for t in counts}
        self.pools = {t: Pool(random.Random("pool:%s:%d" % (t, args.seed)), t, 400_000, CITIES) for t in counts}
        self.item_pools = item_pools(random.Random("items:%d" % args.seed))
        self.line = 1
        self.bytes = 0
        self.bad = []       # expected rejects: {"record", "line", "reason"}
        self.controls = []  # near misses that must be accepted
        self.extra = {"Category": 0, "Artist": 0, "Venue": 0, "Event": 0}
        self.dupes = []

    # ---- records -------------------------------------------------------------------------
    def category(self, c):
        cid, name, parent = c
        s = '<Category ID="%d" >\n<CategoryName>%s</CategoryName>\n' % (cid, xml_escape(name))
        if parent is not None:
            s += '<ParentCategory ID="%d" />\n' % parent
        return s + "</Category>\n"

    def artist(self, a, rng):
        aid, name, cats, top = a
        parts = ['<Artist ID="%d" >\n' % aid]
        for c in cats:
            parts.append('<ArtistCategory ID="%d" />\n' % c)
        if rng.random() < 0.6:
            img = "http://media.example.com/tmimages/TM_GenCatImgs_%s_BW.jpg" % TOP_IMG.get(top, "Music")
        else:
            img = "http://media.example.com/img/%d/%s_%d_TABLET_LANDSCAPE_LARGE_16_9.jpg" % (aid % 1000, slug(name), aid)
        parts.append("<ArtistImageURL>%s</ArtistImageURL>\n" % img)
        en = xml_escape(name)
        if "'" in en and rng.random() < 0.5:
            en = en.replace("'", "&#39;" if rng.random() < 0.5 else "&apos;")
        parts.append("<ArtistName>%s</ArtistName>\n" % en)
        url = "http://tickets.example.com/%s-tickets/artist/%d?camefrom=[CAMEFROM]&brand=none&tm_link=feed_artist" % (slug(name), aid)
        if self.a.seed_quirks:
            parts.append("<ArtistURL><i><![CDATA[%s]]></i></ArtistURL>\n" % url)
        else:
            parts.append("<ArtistURL><![CDATA[%s]]></ArtistURL>\n" % url)
        if rng.random() < 0.25:
            parts.append('<ArtistSocial><Link type="web">https://%s.example.org/</Link>'
                         '<Link type="instagram">https://instagram.example.com/%s</Link></ArtistSocial>\n'
                         % (slug(name).lower(), slug(name).lower()))
        return self.padded("Artist", parts, rng, 3 + len(cats), "ArtistDescription")

    def venue(self, v, rng):
        vid, name, street, city, state, zipc, lat, lon, tz, cur = v
        parts = ['<Venue ID="%d" >\n' % vid,
                 "<VenueName>%s</VenueName>\n" % xml_escape(name),
                 "<VenueStreet>%s</VenueStreet>\n" % xml_escape(street),
                 "<VenueCity>%s</VenueCity>\n" % xml_escape(city),
                 ("<VenueState>%s</VenueState>\n" % xml_escape(state)) if state else "<VenueState/>\n",
                 "<VenueZip>%s</VenueZip>\n" % zipc,
                 "<VenueImageURL>http://media.example.com/v/%d.jpg</VenueImageURL>\n" % vid,
                 "<VenueURL>http://tickets.example.com/%s-tickets/venue/%d?tm_link=feed_venue&amp;brand=none</VenueURL>\n"
                 % (slug(name), vid)]
        if rng.random() < 0.5:
            parts.append("<VenuePhone>+1 (%03d) %03d-%04d</VenuePhone>\n"
                         % (rng.randrange(200, 999), rng.randrange(200, 999), rng.randrange(10000)))
        if rng.random() < 0.4:
            parts.append("<VenueCapacity>%d</VenueCapacity>\n" % rng.choice([250, 500, 1200, 2300, 5000, 18000, 45000]))
        if lat is not None:
            digits = rng.choice((4, 5, 6))
            parts.append("<VenueLatitude>%.*f</VenueLatitude>\n<VenueLongitude>%.*f</VenueLongitude>\n"
                         % (digits, lat, digits, lon))
        if tz is not None:
            parts.append("<VenueTimeZone>%s</VenueTimeZone>\n" % tz)
        if rng.random() < 0.3:
            parts.append("<VenueBoxOffice>\n<Hours>Mon–Fri 10:00–18:00</Hours>\n"
                         "<Policies><![CDATA[<p>Cash & cards accepted.</p>]]></Policies>\n</VenueBoxOffice>\n")
        return self.padded("Venue", parts, rng, 8, "VenueDescription")

    def event(self, i, rng, override=None):
        eid = self.event_ids[i]
        o = override or {}
        arts = self.artists
        # popularity skew: a few artists tour a lot
        h = arts[int(len(arts) * rng.random() ** 1.6)]
        performers = [h]
        top = h[3]
        if top == 2 and rng.random() < 0.8:
            opp = self.by_top.get(2) or arts
            performers.append(opp[rng.randrange(len(opp))])
        else:
            r = rng.random()
            if r < 0.22:
                performers.append(arts[rng.randrange(len(arts))])
            if r < 0.06:
                performers.append(arts[rng.randrange(len(arts))])
        seen = set()
        performers = [p for p in performers if not (p[0] in seen or seen.add(p[0]))]
        v = self.venues[int(len(self.venues) * rng.random() ** 1.3)]
        day = self.start + datetime.timedelta(days=rng.randrange(self.a.days))
        if top == 2:
            t = rng.choice(["19:05", "19:10", "13:05", "19:30", "12:00", "16:00", "18:00", "20:00"])
        elif top in (3, 4):
            t = rng.choice(["19:30", "20:00", "14:00", "11:00", "10:30", "18:00", "19:00"])
        else:
            t = rng.choice(["19:00", "19:30", "20:00", "20:00", "21:00", "18:30", "22:00", "23:30", "00:30"])
        r = rng.random()
        status = ("onsale" if r < 0.85 else "offsale" if r < 0.90 else "soldout" if r < 0.95 else
                  "cancelled" if r < 0.97 else "postponed" if r < 0.985 else "rescheduled")
        onsale = day - datetime.timedelta(days=rng.randrange(7, 180))
        if status == "offsale" and rng.random() < 0.5:
            onsale = day - datetime.timedelta(days=rng.randrange(0, 5))
        pn = h[1]
        r = rng.random()
        if top == 2 and len(performers) > 1:
            pn = "%s vs. %s" % (performers[0][1], performers[1][1])
        elif r < 0.3:
            pn = "%s %s %s" % (h[1], rng.choice(["—", "-", ":"]), rng.choice(TOURS))
        elif r < 0.45 and len(performers) > 1:
            pn = "%s with %s" % (h[1], performers[1][1])
        elif r < 0.52:
            pn = "An Evening with %s" % h[1]
        elif r < 0.58:
            pn = "%s: Live in %s" % (h[1], v[3])
        cat = h[2][0]
        fields = {
            "date": day.isoformat(), "time": t, "status": status,
            "venue": str(v[0]), "performers": [str(p[0]) for p in performers],
        }
        fields.update(o)
        parts = ['<Event ID="%s" >\n' % eid if eid is not None else "<Event>\n"]
        for p in fields["performers"]:
            parts.append('<EventPerformer ID="%s" />\n' % p)
        parts.append('<EventCategory ID="%d" />\n' % cat)
        parts.append('<EventVenue ID="%s" />\n' % fields["venue"])
        parts.append("<EventDate>%s</EventDate>\n" % fields["date"])
        parts.append("<EventTime>%s</EventTime>\n" % fields["time"])
        parts.append("<EventStatus>%s</EventStatus>\n" % fields["status"])
        parts.append("<OnSaleDate>%sT%s</OnSaleDate>\n" % (onsale.isoformat(), rng.choice(["10:00", "10:00", "09:00", "12:00"])))
        parts.append("<PerformanceName>%s</PerformanceName>\n" % xml_escape(pn))
        if rng.random() < 0.35:
            parts.append('<EventPromoter ID="%d" >\n<PromoterName>%s</PromoterName>\n</EventPromoter>\n'
                         % (rng.randrange(100, 999), xml_escape(rng.choice(PROMOTERS))))
        parts.append("<EventURL><![CDATA[http://tickets.example.com/%s-tickets/event/%s?artistid=%d&majorcatid=%d&minorcatid=%d&camefrom=[CAMEFROM]]]></EventURL>\n"
                     % (slug(pn)[:80], eid or "", h[0], top, cat))
        if rng.random() < 0.6:
            parts.append("<EventImageURL>http://media.example.com/img/ev/%s_RETINA_PORTRAIT_3_2.jpg</EventImageURL>\n" % (eid or "x"))
        if "price" in o:
            mn, mx, cur = o["price"]
            parts.append("<MinPrice>%s</MinPrice>\n<MaxPrice>%s</MaxPrice>\n<Currency>%s</Currency>\n" % (mn, mx, cur))
        elif not o.get("noprice") and rng.random() < 0.86:
            mn = rng.choice([10, 15, 19.5, 25, 29.95, 35, 45, 49.5, 59, 75, 89.5, 120, 150])
            cents = rng.choice([0, 0, 0, 0.5, 0.95])
            mn = int(mn) + cents
            mx = mn if rng.random() < 0.03 else round(mn * rng.uniform(1.2, 6.0), 0)
            if rng.random() < 0.02:
                parts.append("<MinPrice>%.2f</MinPrice>\n<Currency>%s</Currency>\n" % (mn, v[9]))
            else:
                parts.append("<MinPrice>%.2f</MinPrice>\n<MaxPrice>%.2f</MaxPrice>\n<Currency>%s</Currency>\n" % (mn, mx, v[9]))
        if rng.random() < 0.4:
            parts.append("<EventTicketLimit>%d</EventTicketLimit>\n" % rng.choice([4, 6, 8, 10]))
        return self.padded("Event", parts, rng, 10, "EventNotes", counted=override is None)

    def padded(self, kind, parts, rng, at, tag, counted=True):
        pd = self.pad[kind]
        base = sum(len(p) for p in parts) + len(kind) + 4
        n = pd.want(rng, base)
        style = self.a.pad_style
        if n > 0 and (style == "elements" or style == "mixed" and rng.random() < 0.5):
            open_, items, close = self.item_pools[kind]
            out = [open_]
            size = len(open_) + len(close)
            while size < n:
                it = rng.choice(items)
                out.append(it)
                size += len(it)
            out.append(close)
            parts.insert(min(at, len(parts)), "".join(out))
        elif n > 0:
            raw = rng.random() < 0.5
            text = self.pools[kind].text(rng, n, raw)
            if raw:
                el = "<%s><![CDATA[<p>%s</p>]]></%s>\n" % (tag, text, tag)
            else:
                el = "<%s>%s</%s>\n" % (tag, text, tag)
            parts.insert(min(at, len(parts)), el)
        parts.append("</%s>\n" % kind)
        s = "".join(parts)
        return s, kind, counted

    # ---- bad records and controls ------------------------------------------------------
    def bad_records(self):
        """[(kind, record string, label, reason or None for controls)] to be spliced in."""
        rng = random.Random("bad:%d" % self.a.seed)
        a0 = self.artists[0]
        known_artist = str(a0[0])
        known_venue = str(self.venues[0][0])
        out = []

        def ev(eid, reason, **o):
            save = self.event_ids
            self.event_ids = [eid]
            s, _, _ = self.event(0, rng, override=o or {"_": 1})
            self.event_ids = save
            out.append(("Event", s, "Event %s" % eid if eid else "Event (no ID)", reason))

        out.append(("Category", '<Category>\n<CategoryName>Orphans</CategoryName>\n<ParentCategory ID="1" />\n</Category>\n',
                    "Category (no ID)", "record without ID"))
        out.append(("Artist", "<Artist>\n<ArtistCategory ID=\"10\" />\n<ArtistImageURL>http://media.example.com/x.jpg</ArtistImageURL>\n"
                    "<ArtistName>Nameless Wonder</ArtistName>\n<ArtistURL><![CDATA[http://tickets.example.com/x]]></ArtistURL>\n</Artist>\n",
                    "Artist (no ID)", "record without ID"))
        out.append(("Venue", "<Venue>\n<VenueName>Nowhere Hall</VenueName>\n<VenueStreet>1 Nowhere St</VenueStreet>\n"
                    "<VenueCity>Nowhere</VenueCity>\n<VenueState>NV</VenueState>\n<VenueZip>89000</VenueZip>\n"
                    "<VenueImageURL>http://media.example.com/v/0.jpg</VenueImageURL>\n<VenueURL>http://tickets.example.com/venue/0</VenueURL>\n"
                    "<VenueTimeZone>America/Los_Angeles</VenueTimeZone>\n</Venue>\n", "Venue (no ID)", "record without ID"))
        ev(None, "record without ID", performers=[known_artist], venue=known_venue)
        ev("", "record with an empty ID", performers=[known_artist], venue=known_venue)
        ev("BAD0000000000001", "unknown venue", performers=[known_artist], venue="99999999")
        ev("BAD0000000000002", "every performer unknown", performers=["99999991", "99999992"], venue=known_venue)
        ev("BAD0000000000003", "bad date", performers=[known_artist], venue=known_venue, date="2026-02-30")
        ev("BAD0000000000004", "bad date", performers=[known_artist], venue=known_venue, date="11/22/2026")
        ev("BAD0000000000005", "bad time", performers=[known_artist], venue=known_venue, time="25:00")
        ev("BAD0000000000006", "bad time", performers=[known_artist], venue=known_venue, time="8pm")
        ev("BAD0000000000007", "bad price", performers=[known_artist], venue=known_venue, price=("twenty", "80.00", "USD"))
        ev("BAD0000000000008", "bad price", performers=[known_artist], venue=known_venue, price=("25.00", "80.0.0", "USD"))
        ev("BAD0000000000009", "unknown status", performers=[known_artist], venue=known_venue, status="available")
        ev("BAD000000000000A", "unknown status", performers=[known_artist], venue=known_venue, status="sold-out")
        # controls: must be kept
        ev("C000000000000001", None, performers=[known_artist, "99999993"], venue=known_venue)
        ev("C000000000000002", None, performers=[known_artist], venue=known_venue, noprice=True)
        late_artist, late_venue = "1999999", "499999"
        ev("C000000000000003", None, performers=[late_artist], venue=late_venue)
        out.append(("Artist@end", '<Artist ID="%s" >\n<ArtistCategory ID="10" />\n<ArtistImageURL>http://media.example.com/late.jpg</ArtistImageURL>\n'
                    "<ArtistName>Late Arrival</ArtistName>\n<ArtistURL><![CDATA[http://tickets.example.com/Late-Arrival-tickets/artist/%s]]></ArtistURL>\n</Artist>\n"
                    % (late_artist, late_artist), "Artist %s" % late_artist, None))
        out.append(("Venue@end", '<Venue ID="%s" >\n<VenueName>Late &amp; Great Hall</VenueName>\n<VenueStreet>2 Late St</VenueStreet>\n'
                    "<VenueCity>Reno</VenueCity>\n<VenueState>NV</VenueState>\n<VenueZip>89501</VenueZip>\n"
                    "<VenueImageURL>http://media.example.com/v/late.jpg</VenueImageURL>\n<VenueURL>http://tickets.example.com/venue/%s</VenueURL>\n"
                    "</Venue>\n" % (late_venue, late_venue), "Venue %s" % late_venue, None))
        # an artist whose name folds to Björk's: makes the affinity header "Björk" ambiguous
        out.append(("Artist", '<Artist ID="1999998" >\n<ArtistCategory ID="10" />\n<ArtistImageURL>http://media.example.com/b.jpg</ArtistImageURL>\n'
                    "<ArtistName>BJORK</ArtistName>\n<ArtistURL><![CDATA[http://tickets.example.com/BJORK-tickets/artist/1999998]]></ArtistURL>\n</Artist>\n",
                    "Artist 1999998", None))
        return out

    # ---- streaming ------------------------------------------------------------------------
    def records(self):
        a = self.a
        rng = self.rng
        ids = set()
        self.event_ids = []
        while len(self.event_ids) < a.events:
            x = "%016X" % rng.getrandbits(64)
            if x not in ids:
                ids.add(x)
                self.event_ids.append(x)
        self.by_top = {}
        for art in self.artists:
            self.by_top.setdefault(art[3], []).append(art)
        ra, rv, re_ = (random.Random("%s:%d" % (k, a.seed)) for k in ("ra", "rv", "re"))
        dupe_set = set(rng.sample(range(a.events), min(a.dupes, a.events)))
        gens = {
            "Category": ((self.category(c), "Category", True) for c in self.cats),
            "Artist": (self.artist(x, ra) for x in self.artists),
            "Venue": (self.venue(x, rv) for x in self.venues),
            "Event": (self.event_with_dupe(i, re_, dupe_set) for i in range(a.events)),
        }
        left = {"Category": len(self.cats), "Artist": len(self.artists), "Venue": len(self.venues), "Event": a.events}
        bad = self.bad_records() if a.bad else []
        rb = random.Random("badpos:%d" % a.seed)
        # schedule: (kind -> {index within that kind's stream: [bad records before it]})
        at_end = []
        before = {k: {} for k in gens}
        for rec in bad:
            kind = rec[0]
            if kind.endswith("@end"):
                at_end.append(rec)
                continue
            n = left[kind]
            before[kind].setdefault(rb.randrange(n + 1) if n else 0, []).append(rec)
        done = {k: 0 for k in gens}
        order = ["Category", "Artist", "Venue", "Event"]
        if a.shuffle:
            rs = random.Random("shuffle:%d" % a.seed)
            while any(left.values()):
                total = sum(left.values())
                x = rs.randrange(total)
                for k in order:
                    if x < left[k]:
                        break
                    x -= left[k]
                yield from self.emit_kind(k, gens, before, done, left)
        else:
            for k in order:
                while left[k]:
                    yield from self.emit_kind(k, gens, before, done, left)
        for k in order:  # bad records scheduled after the last of their kind
            for rec in before[k].get(done[k], []):
                yield ("bad", rec)
        for d in self.dupes:
            yield (d, "Event", False)
        for rec in at_end:
            yield ("bad", rec)

    def emit_kind(self, k, gens, before, done, left):
        for rec in before[k].pop(done[k], []):
            yield ("bad", rec)
        yield next(gens[k])
        done[k] += 1
        left[k] -= 1

    def event_with_dupe(self, i, rng, dupe_set):
        r = self.event(i, rng)
        if i in dupe_set:
            s = r[0]
            st = s.split("<EventStatus>", 1)[1].split("</EventStatus>", 1)[0]
            new = "postponed" if st != "postponed" else "onsale"
            self.dupes.append(s.replace("<EventStatus>%s<" % st, "<EventStatus>%s<" % new))
        return r

    def write(self, out):
        a = self.a
        head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                "<!-- Event info feed: generated by scripts/gen-feed.py, seed %d (%d categories, %d artists, "
                "%d venues, %d events) -->\n<EventFeed>\n"
                % (a.seed, len(self.cats), len(self.artists), len(self.venues), a.events))
        self.put(out, head)
        for item in self.records():
            if item[0] == "bad":
                kind, s, label, reason = item[1]
                entry = {"record": label, "line": self.line}
                if reason is None:
                    self.controls.append(entry)
                    k = kind.split("@")[0]
                    self.extra[k] += 1
                else:
                    entry["reason"] = reason
                    self.bad.append(entry)
                self.put(out, s)
                continue
            s, kind, counted = item
            n = self.put(out, s)
            if kind in self.pad:
                self.pad[kind].wrote(n, counted)
        self.put(out, "</EventFeed>\n")

    def put(self, out, s):
        b = s.encode("utf-8")
        out.write(b)
        self.bytes += len(b)
        self.line += s.count("\n")
        return len(b)

    # ---- affinity -------------------------------------------------------------------------
    def write_affinity(self, out):
        a = self.a
        rng = random.Random("affinity:%d" % a.seed)
        lo, hi = (int(x) for x in a.affinity_recs.split("-"))
        arts = self.artists
        order = list(range(len(arts)))
        rng.shuffle(order)
        want_n = a.affinity_artists or len(arts)
        want_bytes = a.affinity_mb * 1e6 if not a.affinity_artists else float("inf")
        st = {"bytes": 0, "line": 1, "blocks": 0, "exp": 0}
        rejects = []

        def emit(text):
            b = text.encode("utf-8")
            out.write(b)
            st["bytes"] += len(b)
            st["line"] += text.count("\n")

        # bad blocks: (header, [(id, name, score, reason or None)], header reason or None)
        bad_blocks = []
        skip = set()
        if a.bad:
            k0, k2 = arts[0], arts[2]
            good = next(x for x in arts[1:] if x[1] != "Björk")
            skip.add(good[0])
            bad_blocks.append(("Nobody By That Name", [(k0[0], k0[1], "0.5", None)], "no artist with that name"))
            if any(x[1] == "Björk" for x in arts):
                bad_blocks.append(("Björk", [(k0[0], k0[1], "0.25", None)], "name matches several artists"))
                skip.update(x[0] for x in arts if x[1] == "Björk")
            bad_blocks.append((good[1], [(k0[0], k0[1], "abc", "bad score"), (k2[0], k2[1], "0.2", None),
                                         (k0[0], k0[1], "1.7", "bad score"), (k0[0], k0[1], "-0.2", "bad score"),
                                         (99999999, "Ghost Artist", "0.3", "unknown ID")], None))
        bad_at = {}
        for blk in bad_blocks:
            bad_at.setdefault(rng.randrange(0, 40), []).append(blk)

        def emit_bad(blk):
            header, lines, why = blk
            label = "Recommended artists for %s" % header
            if why:
                rejects.append({"record": label, "line": st["line"], "reason": why})
            emit(label + "\n")
            for rid, rn, sc, lwhy in lines:
                if lwhy and not why:
                    rejects.append({"record": label, "line": st["line"], "reason": lwhy})
                emit("%s,%s,%s\n" % (rid, rn, sc))
            emit("-----\n")

        for pos, idx in enumerate(order):
            for blk in bad_at.pop(pos, []):
                emit_bad(blk)
            if st["blocks"] >= want_n or st["bytes"] >= want_bytes:
                break
            art = arts[idx]
            if art[0] in skip:
                continue
            k = rng.randint(lo, hi)
            pool = self.by_top.get(art[3], arts) if rng.random() < 0.8 else arts
            recs = []
            seen = {art[0]}
            while len(recs) < k and len(seen) < len(arts):
                r = pool[rng.randrange(len(pool))] if rng.random() < 0.85 else arts[rng.randrange(len(arts))]
                if r[0] not in seen:
                    seen.add(r[0])
                    recs.append(r)
            top = rng.uniform(0.02, 0.35)
            scores = sorted((top * rng.uniform(0.05, 1.0) ** 2 for _ in recs), reverse=True)
            if scores:
                scores[0] = top
            lines = ["Recommended artists for %s\n" % art[1]]
            for r, sc in zip(recs, scores):
                if "e" in repr(sc):
                    st["exp"] += 1
                lines.append("%d,%s,%r\n" % (r[0], r[1], sc))
            lines.append("-----\n")
            emit("".join(lines))
            st["blocks"] += 1
        for pos in sorted(bad_at):
            for blk in bad_at[pos]:
                emit_bad(blk)
        res = {"bytes": st["bytes"], "artists": st["blocks"], "lines": st["line"] - 1,
               "scores_in_exponent_notation": st["exp"]}
        if a.bad:
            res["expected_rejects"] = len(rejects)
            res["rejects"] = rejects
        return res


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="%(prog)s [options]")
    p.add_argument("--artists", type=int, default=DEFAULT_COUNTS["Artist"])
    p.add_argument("--venues", type=int, default=DEFAULT_COUNTS["Venue"])
    p.add_argument("--categories", type=int, default=DEFAULT_COUNTS["Category"])
    p.add_argument("--events", type=int, default=DEFAULT_COUNTS["Event"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start-date", default="2026-11-01")
    p.add_argument("--days", type=int, default=120)
    p.add_argument("--out")
    p.add_argument("--size-mb", type=float)
    p.add_argument("--no-pad", action="store_true")
    p.add_argument("--pad-style", choices=("text", "elements", "mixed"), default="text")
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--dupes", type=int, default=0)
    p.add_argument("--bad", action="store_true")
    p.add_argument("--seed-quirks", action="store_true")
    p.add_argument("--affinity")
    p.add_argument("--affinity-artists", type=int, default=0)
    p.add_argument("--affinity-mb", type=float, default=11.1)
    p.add_argument("--affinity-recs", default="5-30")
    a = p.parse_args()
    if not a.out and not a.affinity:
        p.error("give --out FILE (or -) and/or --affinity FILE")
    if a.artists < 3 or a.venues < 1 or a.categories < 1 or a.events < 0 or a.days < 1:
        p.error("need at least 3 artists, 1 venue, 1 category, 0 events, 1 day")
    t0 = time.perf_counter()
    f = Feed(a)
    summary = {"seed": a.seed}
    if a.out:
        out = sys.stdout.buffer if a.out == "-" else open(a.out, "wb", buffering=1 << 20)
        try:
            f.write(out)
        finally:
            if out is not sys.stdout.buffer:
                out.close()
            else:
                out.flush()
        x = f.extra
        summary["xml"] = {
            "file": a.out, "bytes": f.bytes, "lines": f.line - 1,
            "records": {"Category": len(f.cats) + x["Category"], "Artist": len(f.artists) + x["Artist"],
                        "Venue": len(f.venues) + x["Venue"], "Event": a.events + x["Event"]},
            "dupes": len(f.dupes),
        }
        if a.bad:
            summary["xml"]["expected_rejects"] = len(f.bad)
            summary["xml"]["rejects"] = f.bad
            summary["xml"]["controls"] = f.controls
    else:
        f.by_top = {}
        for art in f.artists:
            f.by_top.setdefault(art[3], []).append(art)
    if a.affinity:
        with open(a.affinity, "wb", buffering=1 << 20) as out:
            summary["affinity"] = dict(file=a.affinity, **f.write_affinity(out))
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(summary, ensure_ascii=False), file=sys.stderr)


if __name__ == "__main__":
    main()
