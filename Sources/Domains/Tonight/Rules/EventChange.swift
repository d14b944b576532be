/// What about an event its followers are told when a feed changes it (`event.changed`).
public enum EventField: String, Sendable, CaseIterable {
    case venue, start, status, price

    /// The fields that differ between the event as it was and as it is, in this order.
    public static func changed(from old: FeedEvent, to new: FeedEvent) -> [EventField] {
        allCases.filter { field in
            switch field {
            case .venue: old.venue != new.venue
            case .start: old.start != new.start
            case .status: old.status != new.status
            case .price: old.minPrice != new.minPrice || old.maxPrice != new.maxPrice || old.currency != new.currency
            }
        }
    }
}
