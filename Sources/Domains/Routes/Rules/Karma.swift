/// Karma levels (seed 003's gamification): a traveller holds the highest level whose threshold
/// their points reached.
public enum Karma {
    /// From the lowest: the points a level needs, and its name.
    public static let levels: [(points: Int, name: String)] = [
        (0, "newcomer"), (10, "scout"), (50, "guide"), (200, "navigator"), (1000, "pathfinder"),
    ]

    public static func level(for points: Int) -> String {
        levels.last { points >= $0.points }?.name ?? levels[0].name
    }
}
