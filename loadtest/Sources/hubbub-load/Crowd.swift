/// Where each simulated person (a venue's patron, a traveller) is in the run.
enum Whereabouts { case absent, arriving, present, leaving, reconnecting }

/// Who is where; touched by the driver and by arrival and close completions (under a mutex).
struct CrowdState {
    var whereabouts: [Whereabouts]
    var absent: IndexPool
    var present: IndexPool
    var arriving = 0
    var leaving = 0

    init(count: Int) {
        whereabouts = Array(repeating: .absent, count: count)
        absent = IndexPool(capacity: count)
        present = IndexPool(capacity: count)
        for i in 0..<count { absent.insert(i) }
    }

    /// Picks someone present at random and marks them leaving; nil when nobody is present.
    mutating func pickLeaver() -> Int? {
        guard let i = present.randomElement() else { return nil }
        move(i, to: .leaving)
        return i
    }

    mutating func move(_ i: Int, to w: Whereabouts) {
        switch whereabouts[i] {
        case .absent: absent.remove(i)
        case .arriving, .reconnecting: arriving -= 1
        case .present: present.remove(i)
        case .leaving: leaving -= 1
        }
        whereabouts[i] = w
        switch w {
        case .absent: absent.insert(i)
        case .arriving, .reconnecting: arriving += 1
        case .present: present.insert(i)
        case .leaving: leaving += 1
        }
    }
}

/// A set of indices with O(1) insert, remove and random pick.
struct IndexPool {
    private(set) var items: [Int] = []
    private var slot: [Int]

    init(capacity: Int) { slot = Array(repeating: -1, count: capacity) }

    var count: Int { items.count }

    mutating func insert(_ i: Int) {
        guard slot[i] < 0 else { return }
        slot[i] = items.count
        items.append(i)
    }

    mutating func remove(_ i: Int) {
        let s = slot[i]
        guard s >= 0 else { return }
        let last = items.removeLast()
        if last != i {
            items[s] = last
            slot[last] = s
        }
        slot[i] = -1
    }

    func randomElement() -> Int? { items.isEmpty ? nil : items[Int.random(in: 0..<items.count)] }
}

extension ClosedRange<Double> {
    /// Waits a think time drawn evenly from this range of milliseconds.
    func think() async {
        let ms = lowerBound == upperBound ? lowerBound : Double.random(in: self)
        if ms > 0 { try? await Task.sleep(nanoseconds: UInt64(ms * 1e6)) }
    }
}
