/// A small city's GTFS feed, for the transit tests.
public enum TransitFixture {
    /// Two routes of six stops each along a line of latitude 52.36, 0.01° (about 680 m) apart;
    /// stop s5 is on both. Route r1 (tram) serves s0…s5, r2 (bus) s5…s10; s11 is served by none.
    public static func smallCity(extraStops: String = "", stopTimes extraTimes: String = "") -> [(String, String)] {
        var stops = "stop_id,stop_name,stop_lat,stop_lon\n"
        for i in 0..<12 { stops += "s\(i),Stop \(i),52.36,\(4.80 + Double(i) * 0.01)\n" }
        var times = "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
        for i in 0...5 { times += "t1,08:0\(i):00,08:0\(i):00,s\(i),\(i)\n" }
        for i in 5...10 { times += "t2,09:0\(i - 5):00,09:0\(i - 5):00,s\(i),\(i)\n" }
        return [
            ("agency.txt", "agency_id,agency_name,agency_url,agency_timezone,agency_lang\nA,City Transit,http://example.com,Europe/Amsterdam,en\n"),
            ("stops.txt", stops + extraStops),
            ("routes.txt", "route_id,route_short_name,route_long_name,route_type\nr1,5,Tram five,0\nr2,22,Bus 22,3\n"),
            ("trips.txt", "route_id,service_id,trip_id\nr1,daily,t1\nr2,daily,t2\n"),
            ("stop_times.txt", times + extraTimes),
        ]
    }
}
