import Foundation
import Synchronization

extension LocalDateTime {
    /// Seconds since 1970-01-01T00:00 of this wall-clock time read as if it were UTC (days from
    /// the civil calendar, H. Hinnant's algorithm): the zone's offset is then one subtraction.
    public var naiveSeconds: Double {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + hour * 3_600 + minute * 60)
    }

    /// The wall-clock time `seconds` after 1970-01-01T00:00 (seconds dropped).
    public init(naiveSeconds seconds: Double) {
        let total = Int(seconds.rounded(.down))
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let rest = total - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        // Every value is in range by construction.
        self = LocalDateTime(year: y, month: m, day: d, hour: rest / 3_600, minute: rest % 3_600 / 60)!
    }
}

/// Wall-clock times in a time zone, as instants (seconds since 1970, UTC) and back.
public struct ZoneClock: Sendable {
    public let zone: TimeZone
    /// The zone's offset by quarter hour of UTC (zones change offset on quarter hours only):
    /// asking Foundation costs microseconds, and a feed's 60,000 events fall in a few thousand.
    private let offsets = Offsets()

    private final class Offsets: Sendable {
        let byQuarter = Mutex<[Int: Int]>([:])
    }

    public init(_ zone: TimeZone) { self.zone = zone }

    /// The zone's offset from UTC, in seconds, at `instant`.
    public func offset(at instant: Double) -> Double {
        let quarter = Int((instant / 900).rounded(.down))
        if let known = offsets.byQuarter.withLock({ $0[quarter] }) { return Double(known) }
        let seconds = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(quarter) * 900))
        offsets.byQuarter.withLock { cache in
            if cache.count > 100_000 { cache.removeAll() } // a bound, for a server up for years
            cache[quarter] = seconds
        }
        return Double(seconds)
    }

    /// The instant a venue-local time names. In a daylight-saving gap (02:30 on the night clocks
    /// go forward) it is read with the offset before the change; in a repeated hour, the first.
    public func instant(of local: LocalDateTime) -> Double {
        let naive = local.naiveSeconds
        let before = offset(at: naive - 86_400)
        let guess = naive - before
        let at = offset(at: guess)
        if at == before { return guess }
        let second = naive - at
        // The offset at `second` is `at` when the time exists after the change (not in a gap).
        return offset(at: second) == at ? second : guess
    }

    /// The wall-clock time in this zone at `instant`.
    public func local(at instant: Double) -> LocalDateTime {
        LocalDateTime(naiveSeconds: instant + offset(at: instant))
    }
}

/// Tonight's window in a venue's zone: from now until the end of the local night, the next time
/// the venue's clock reads `endHour` o'clock (04:00 by default: at 01:00 the night is still on,
/// at 05:00 tonight means the coming evening and night).
public struct NightWindow: Sendable, Equatable {
    /// The local hour the night ends (0–23).
    public var endHour: Int

    public init(endHour: Int = 4) { self.endHour = endHour }

    /// The instant tonight ends for a venue in `zone`, seen at `now`.
    public func end(at now: Double, in zone: ZoneClock) -> Double {
        let local = zone.local(at: now)
        var day = LocalDateTime(year: local.year, month: local.month, day: local.day, hour: endHour)!
        if local.hour >= endHour { day = LocalDateTime(naiveSeconds: day.naiveSeconds + 86_400) }
        return zone.instant(of: day)
    }

    /// Whether an event starting at `start` is tonight's, seen at `now`: it starts from now on
    /// and before the end of the venue's local night.
    public func contains(_ start: Double, at now: Double, in zone: ZoneClock) -> Bool {
        start >= now && start < end(at: now, in: zone)
    }
}
