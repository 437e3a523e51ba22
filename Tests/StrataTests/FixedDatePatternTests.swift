// The date fast path must agree with DateFormatter wherever it answers: for common REST
// patterns, zones with and without daylight saving time, random dates (with fractions of a
// millisecond) and damaged strings. Where it declines, the formatter decides.

import XCTest
import StrataTestSupport
@testable import Strata

final class FixedDatePatternTests: XCTestCase {
    private func formatter(_ format: String, zone: TimeZone) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = format
        return formatter
    }

    func testAgreesWithDateFormatterWhereverItAnswers() throws {
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 17))
        let scale = TestEnvironment.fuzzScale
        let formats = ["EEE MMM dd HH:mm:ss Z yyyy", "yyyy-MM-dd'T'HH:mm:ssZZZZZ", "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                       "yyyy-MM-dd", "dd/MM/yyyy HH:mm", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX", "MMM dd, yyyy", "yyyyMMdd'T'HHmmss.SS"]
        let zones = [TimeZone(identifier: "UTC")!, TimeZone(secondsFromGMT: 19_800)!, TimeZone(secondsFromGMT: -25_200)!,
                     TimeZone(identifier: "America/New_York")!]
        let damage = Array("0123456789 :-+TZ.,/aJFMSODN".utf8)
        var fastAnswers = 0
        for format in formats {
            for zone in zones {
                let formatter = formatter(format, zone: zone)
                let pattern = try XCTUnwrap(FixedDatePattern(formatter), format)
                for _ in 0 ..< 150 * scale {
                    // 1600-01-01 ... 2400-01-01, with fractions of a millisecond.
                    let date = Date(timeIntervalSince1970: Double.random(in: -11_676_096_000 ... 13_569_465_600, using: &generator))
                    let text = formatter.string(from: date)
                    if let fast = pattern.string(from: date) { XCTAssertEqual(fast, text, "\(format) in \(zone.identifier)") }
                    let expected = formatter.date(from: text)
                    if let fast = pattern.date(from: text) {
                        fastAnswers += 1
                        XCTAssertEqual(fast, expected, "\(text) as \(format) in \(zone.identifier)")
                    }
                    // A damaged copy: accepted only if the formatter accepts it too, with the same date.
                    var bytes = Array(text.utf8)
                    bytes[Int.random(in: 0 ..< bytes.count, using: &generator)] = damage.randomElement(using: &generator)!
                    let damaged = String(decoding: bytes, as: UTF8.self)
                    if let fast = pattern.date(from: damaged) {
                        XCTAssertEqual(fast, formatter.date(from: damaged), "\(damaged) as \(format) in \(zone.identifier)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(fastAnswers, formats.count * 3 * 100 * scale, "the fast path answers the common cases")
        // Dates before the Gregorian reform, and a zone with daylight saving time and no zone
        // field, are left to the formatter.
        let plain = formatter("yyyy-MM-dd", zone: TimeZone(identifier: "UTC")!)
        XCTAssertNil(FixedDatePattern(plain)?.date(from: "1500-03-01"))
        XCTAssertNil(FixedDatePattern(formatter("yyyy-MM-dd", zone: TimeZone(identifier: "America/New_York")!))?.date(from: "2020-03-01"))
        // Patterns it does not reproduce.
        XCTAssertNil(FixedDatePattern(formatter("EEEE, MMMM d, yyyy", zone: .current)))
        XCTAssertNil(FixedDatePattern(formatter("yy-MM-dd", zone: .current)))
        let french = formatter("yyyy-MM-dd", zone: .current)
        french.locale = Locale(identifier: "fr_FR")
        XCTAssertNil(FixedDatePattern(french))
    }
}
