import XCTest
import LoadHarness

final class RateScheduleTests: XCTestCase {
    func testNightClockMapsTimesToRunSeconds() throws {
        let night = try NightClock(from: "18:00", to: "23:00", seconds: 300)
        XCTAssertEqual(try night.seconds(at: "18:00"), 0)
        XCTAssertEqual(try night.seconds(at: "21:30"), 210)
        XCTAssertEqual(try night.seconds(at: "23:00"), 300)
        XCTAssertEqual(night.clock(at: 210), "21:30")
        XCTAssertEqual(night.clock(at: 999), "23:00", "clamped to the night")
        let late = try NightClock(from: "22:00", to: "03:00", seconds: 50)
        XCTAssertEqual(try late.seconds(at: "01:00"), 30, "a night may pass midnight")
        XCTAssertEqual(late.clock(at: 30), "01:00")
    }

    func testCurveInterpolatesAndIsFlatOutside() throws {
        let c = try Curve([.init(t: 10, value: 0), .init(t: 20, value: 1), .init(t: 40, value: 0.5)])
        XCTAssertEqual(c.value(at: 0), 0)
        XCTAssertEqual(c.value(at: 15), 0.5, accuracy: 1e-9)
        XCTAssertEqual(c.value(at: 30), 0.75, accuracy: 1e-9)
        XCTAssertEqual(c.value(at: 100), 0.5)
    }

    /// Over any run, the events released equal the integral of the rate (within one).
    func testRateAccumulatorReleasesTheIntegral() {
        var a = RateAccumulator()
        var released = 0
        var expected = 0.0
        var t = 0.0
        while t < 30 {
            let dt = Double.random(in: 0.001...0.05)
            let rate = 100 + 90 * sin(t) // varies between 10 and 190 per second
            released += a.advance(perSecond: rate, seconds: dt)
            expected += rate * dt
            t += dt
        }
        XCTAssertEqual(Double(released), expected, accuracy: 1)
        XCTAssertEqual(a.advance(perSecond: 0, seconds: 5), 0)
        var slow = RateAccumulator()
        XCTAssertEqual((0..<10).map { _ in slow.advance(perSecond: 0.5, seconds: 1) }.reduce(0, +), 5, "fractions carry over")
    }

    /// The crowd follows its curve, never faster than the arrival and departure rates allow.
    func testCrowdPlannerFollowsTheCurveWithinItsRates() throws {
        let curve = try Curve([.init(t: 0, value: 0), .init(t: 10, value: 1), .init(t: 20, value: 0.2)])
        var planner = CrowdPlanner(capacity: 1000, present: curve, maxArrivalsPerSecond: 50, maxDeparturesPerSecond: 200)
        var crowd = 0
        var t = 0.0
        let dt = 0.1
        var maxStepUp = 0, maxStepDown = 0
        while t < 40 {
            t += dt
            let change = planner.step(at: t, dt: dt, current: crowd)
            maxStepUp = max(maxStepUp, change)
            maxStepDown = max(maxStepDown, -change)
            crowd += change
            if t > 9.9 && t < 10.1 { XCTAssertLessThanOrEqual(crowd, 500 + 5, "arrivals are capped at 50/s") }
        }
        XCTAssertLessThanOrEqual(maxStepUp, 6)
        XCTAssertLessThanOrEqual(maxStepDown, 21)
        XCTAssertEqual(crowd, 200, "ends on the curve once the rates allow")
        XCTAssertEqual(planner.target(at: 15), 600)
    }
}
