// ExactISO8601: dates as ISO 8601 text that reads back to the very same `Date`, for the
// tools' export and import (`strata export`/`import`/`dump`/`query`, Strata Studio). A
// `Date` is a Double of seconds since 2001; the milliseconds `ISO8601FormatStyle` writes
// lose the rest, so an export imported back changed every date that had more.

import Foundation

/// ISO 8601 in UTC (`2023-11-14T22:13:20.123456789Z`): the whole second, then as many
/// fractional digits as it takes to give back the Date's exact Double — at least three
/// (milliseconds, as before), usually nine or fewer, at most the fraction's exact decimal
/// expansion.
enum ExactISO8601 {
    /// Whole seconds in UTC, such as `2023-11-14T22:13:20Z`.
    private static let wholeSeconds = Date.ISO8601FormatStyle()
    private static let withMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The text of `date`, which ``date(from:)`` reads back to an equal Double.
    static func string(from date: Date) -> String {
        let seconds = date.timeIntervalSinceReferenceDate
        // Not a point in time ISO 8601 can write: what the formatter makes of it.
        guard seconds.isFinite else { return withMilliseconds.format(date) }
        let whole = seconds.rounded(.down)
        // Exact: the fraction of a Double is a Double.
        let fraction = seconds - whole
        let text = wholeSeconds.format(Date(timeIntervalSinceReferenceDate: whole))
        guard text.hasSuffix("Z") else { return withMilliseconds.format(date) }
        return text.dropLast() + "." + digits(of: fraction, after: whole, making: seconds) + "Z"
    }

    /// The fewest fractional digits (at least three) whose value added to `whole` gives
    /// `seconds` back, as ``date(from:)`` adds them.
    private static func digits(of fraction: Double, after whole: Double, making seconds: Double) -> String {
        for count in 3 ... 17 {
            let text = String(format: "%.\(count)f", fraction)
            // "1.000": rounded up into the next second; more digits are needed.
            guard text.hasPrefix("0."), let value = Double(text), whole + value == seconds else { continue }
            return String(text.dropFirst(2))
        }
        // The exact decimal expansion (a Double's fraction has one, at most 1,074 digits):
        // it reads back as the fraction itself, and whole + fraction is `seconds` exactly.
        var exact = String(format: "%.1074f", fraction).dropFirst(2)
        while exact.count > 3, exact.last == "0" { exact = exact.dropLast() }
        return String(exact)
    }

    /// The date of ISO 8601 text: `…T12:34:56.789…` with any number of fractional digits
    /// (read exactly: the whole second plus the fraction as a Double), any UTC offset; or
    /// what `ISO8601FormatStyle` reads. Nil when it is none of these.
    static func date(from text: String) -> Date? {
        guard let time = text.firstIndex(of: "T"), let dot = text[time...].firstIndex(of: ".") else {
            return (try? wholeSeconds.parse(text)) ?? (try? withMilliseconds.parse(text))
        }
        let start = text.index(after: dot)
        let end = text[start...].firstIndex(where: { !("0" ... "9").contains($0) }) ?? text.endIndex
        guard start < end, let whole = try? wholeSeconds.parse(String(text[..<dot] + text[end...])),
              let fraction = Double("0." + text[start ..< end]) else {
            return try? withMilliseconds.parse(text)
        }
        return Date(timeIntervalSinceReferenceDate: whole.timeIntervalSinceReferenceDate + fraction)
    }
}
