import XCTest

/// Polls `condition` every `interval` until it holds or `timeout` seconds pass, then checks it once
/// more; returns whether it held. Without `message` nothing is recorded (the caller asserts, as
/// the loops it replaces did); with one, a timeout records `XCTFail("not within <timeout> s:
/// <message>")` at the caller's line, the message made then (so it can show the final state).
/// Cancellation ends the wait early. It rethrows: `await eventually {…}` for a condition that
/// cannot throw, `try await eventually {…}` for one that can (its error ends the wait).
@discardableResult
public func eventually(timeout: Double = 5,
                      every interval: Duration = .milliseconds(10),
                      _ message: @autoclosure () -> String? = nil,
                      file: StaticString = #filePath, line: UInt = #line,
                      _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if try await condition() { return true }
        try? await Task.sleep(for: interval) // cancelled: the loop ends on its next test
    }
    if try await condition() { return true }
    if let message = message() { XCTFail("not within \(timeout) s: \(message)", file: file, line: line) }
    return false
}
