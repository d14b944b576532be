import XCTest
@testable import LoadHarness
final class PlaceholderTests: XCTestCase {}
