// FixedDatePattern: a fast path for the date formats REST APIs use ("EEE MMM dd HH:mm:ss Z
// yyyy", "yyyy-MM-dd'T'HH:mm:ss.SSSZ", ...). On Linux, `DateFormatter.date(from:)` clones an
// ICU formatter per call (~20 µs), which dominated importing Twitter's payloads. A pattern of
// fixed-width numeric fields, English abbreviations and literals, on an en_US_POSIX Gregorian
// formatter, is parsed and printed here instead; anything else, and any string this parser
// does not accept, still goes to the formatter, which stays the authority.

import Foundation

struct FixedDatePattern {
    private enum Token: Equatable {
        case literal(UInt8)
        case year, month, monthName, day, weekdayName, hour, minute, second
        /// Fraction of a second with this many digits.
        case fraction(Int)
        /// `Z` (+hhmm), or `ZZZZZ`/`XXX`/`XXXXX` (+hh:mm or "Z").
        case zone(colon: Bool)
    }

    private let tokens: [Token]
    /// The formatter's time zone offset when it never changes (no daylight saving time):
    /// dates are printed in it, and parsed in it when the pattern has no zone field.
    private let fixedOffset: Int?
    private let hasZoneField: Bool

    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map { Array($0.utf8) }
    private static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].map { Array($0.utf8) }

    /// The pattern of `formatter`, or nil when it is not one this parser reproduces exactly.
    init?(_ formatter: DateFormatter) {
        guard formatter.locale?.identifier == "en_US_POSIX", formatter.calendar.identifier == .gregorian,
              !formatter.isLenient, let format = formatter.dateFormat else { return nil }
        var tokens: [Token] = []
        var characters = Array(format.utf8)[...]
        while let first = characters.first {
            if first == UInt8(ascii: "'") {
                // A quoted literal ('T'); '' is a quote.
                characters.removeFirst()
                guard let close = characters.firstIndex(of: UInt8(ascii: "'")) else { return nil }
                if close == characters.startIndex { tokens.append(.literal(UInt8(ascii: "'"))) }
                tokens += characters[..<close].map(Token.literal)
                characters = characters[(close + 1)...]
                continue
            }
            let run = characters.prefix { $0 == first }.count
            characters.removeFirst(run)
            switch (Character(UnicodeScalar(first)), run) {
            case ("y", 4): tokens.append(.year)
            case ("M", 2): tokens.append(.month)
            case ("M", 3): tokens.append(.monthName)
            case ("d", 2): tokens.append(.day)
            case ("E", 1 ... 3): tokens.append(.weekdayName)
            case ("H", 2): tokens.append(.hour)
            case ("m", 2): tokens.append(.minute)
            case ("s", 2): tokens.append(.second)
            case ("S", 1 ... 9): tokens.append(.fraction(run))
            case ("Z", 1 ... 3): tokens.append(.zone(colon: false))
            case ("Z", 5), ("X", 3), ("X", 5): tokens.append(.zone(colon: true))
            case (let c, _) where !c.isLetter && first < 0x80:
                tokens += repeatElement(.literal(first), count: run)
            default:
                return nil
            }
        }
        // The fields a date needs, each once.
        for needed: [Token] in [[.year], [.month, .monthName], [.day]] where tokens.filter(needed.contains).count != 1 { return nil }
        for optional: Token in [.hour, .minute, .second, .weekdayName] where tokens.filter({ $0 == optional }).count > 1 { return nil }
        let zones = tokens.filter { if case .zone = $0 { return true } else { return false } }.count
        guard zones <= 1 else { return nil }
        hasZoneField = zones == 1
        let zone = formatter.timeZone ?? TimeZone.current
        fixedOffset = zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: 0)) == nil
            ? zone.secondsFromGMT(for: Date(timeIntervalSince1970: 0)) : nil
        self.tokens = tokens
    }

    // MARK: Parsing

    /// The date `text` denotes, or nil when this parser does not accept it (the formatter
    /// then decides).
    func date(from text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    private func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        // Without a zone field the formatter's zone applies: only a fixed one is reproduced.
        guard hasZoneField || fixedOffset != nil else { return nil }
        var position = 0
        var fields = Fields(offset: fixedOffset ?? 0)
        for token in tokens {
            guard Self.read(token, from: bytes, at: &position, into: &fields) else { return nil }
        }
        guard position == bytes.count else { return nil }
        return Self.date(of: fields)
    }

    /// The fields of a date as read so far (`offset`: seconds east of GMT).
    private struct Fields {
        var year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, nanoseconds = 0
        var weekday: Int?
        var offset: Int
    }

    /// Reads `token` at `position` into `fields`; false when the text does not match it.
    @inline(__always)
    private static func read(_ token: Token, from bytes: UnsafeBufferPointer<UInt8>, at position: inout Int,
                             into fields: inout Fields) -> Bool {
        switch token {
        case .literal(let byte):
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
        case .year: guard let value = digits(4, bytes, &position) else { return false }; fields.year = value
        case .month: guard let value = digits(2, bytes, &position) else { return false }; fields.month = value
        case .monthName: guard let value = name(monthNames, bytes, &position) else { return false }; fields.month = value + 1
        case .day: guard let value = digits(2, bytes, &position) else { return false }; fields.day = value
        case .weekdayName: guard let value = name(weekdayNames, bytes, &position) else { return false }; fields.weekday = value
        case .hour: guard let value = digits(2, bytes, &position) else { return false }; fields.hour = value
        case .minute: guard let value = digits(2, bytes, &position) else { return false }; fields.minute = value
        case .second: guard let value = digits(2, bytes, &position) else { return false }; fields.second = value
        case .fraction(let count):
            guard let value = digits(count, bytes, &position) else { return false }
            var scaled = value
            for _ in count ..< 9 { scaled *= 10 }
            fields.nanoseconds = scaled
        case .zone(let colon):
            guard let offset = zone(colon: colon, bytes, &position) else { return false }
            fields.offset = offset
        }
        return true
    }

    /// `count` decimal digits at `position`, moving past them.
    @inline(__always)
    private static func digits(_ count: Int, _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Int? {
        guard position + count <= bytes.count else { return nil }
        var value = 0
        for index in position ..< position + count {
            let digit = Int(bytes[index]) - 48
            guard digit >= 0, digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        position += count
        return value
    }

    /// The index in `names` of the three-letter name at `position`, moving past it.
    @inline(__always)
    private static func name(_ names: [[UInt8]], _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Int? {
        guard position + 3 <= bytes.count else { return nil }
        for (index, name) in names.enumerated() where bytes[position] == name[0] && bytes[position + 1] == name[1] && bytes[position + 2] == name[2] {
            position += 3
            return index
        }
        return nil
    }

    /// A zone offset in seconds at `position` (+hhmm, or +hh:mm or "Z" with `colon`), moving past it.
    @inline(__always)
    private static func zone(colon: Bool, _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Int? {
        guard position < bytes.count else { return nil }
        if colon, bytes[position] == UInt8(ascii: "Z") {
            position += 1
            return 0
        }
        let sign = bytes[position]
        guard sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
        position += 1
        guard let hours = digits(2, bytes, &position) else { return nil }
        if colon {
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
            position += 1
        }
        guard let minutes = digits(2, bytes, &position), hours <= 23, minutes <= 59 else { return nil }
        return (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
    }

    /// The date `fields` name, or nil when they are out of range or left to the formatter.
    @inline(__always)
    private static func date(of fields: Fields) -> Date? {
        // Before 1583 ICU's calendar is Julian: those dates are left to the formatter.
        guard fields.year >= 1583, (1 ... 12).contains(fields.month), fields.day >= 1,
              fields.day <= daysInMonth(fields.month, year: fields.year),
              fields.hour <= 23, fields.minute <= 59, fields.second <= 59 else { return nil }
        let days = daysSinceEpoch(year: fields.year, month: fields.month, day: fields.day)
        // A weekday that disagrees with the date: let the formatter decide.
        if let weekday = fields.weekday, (days % 7 + 11) % 7 != weekday { return nil }
        let seconds = days * 86_400 + fields.hour * 3600 + fields.minute * 60 + fields.second - fields.offset
        if fields.nanoseconds == 0 { return Date(timeIntervalSince1970: Double(seconds)) }
        // As ICU computes it: whole milliseconds since 1970, then seconds since 2001.
        let milliseconds = Double(seconds) * 1000 + Double(fields.nanoseconds / 1_000_000)
        return Date(timeIntervalSinceReferenceDate: milliseconds / 1000 - 978_307_200)
    }

    // MARK: Formatting

    /// `date` as the formatter would print it, or nil when this printer does not reproduce
    /// it (a zone with daylight saving time, a year outside 1583...9999).
    func string(from date: Date) -> String? {
        guard let offset = fixedOffset else { return nil }
        let interval = date.timeIntervalSince1970 + Double(offset)
        guard interval.isFinite else { return nil }
        // Whole milliseconds, rounded to the nearest as Foundation's formatter does; a value
        // within a hair of a half millisecond may round either way there: left to it.
        let exact = interval * 1000
        guard abs(exact - exact.rounded(.down) - 0.5) > 0.01 else { return nil }
        let totalMilliseconds = Int(exact.rounded())
        var seconds = totalMilliseconds.quotientAndRemainder(dividingBy: 1000)
        if seconds.remainder < 0 { seconds = (seconds.quotient - 1, seconds.remainder + 1000) }
        var days = seconds.quotient.quotientAndRemainder(dividingBy: 86_400)
        if days.remainder < 0 { days = (days.quotient - 1, days.remainder + 86_400) }
        let (year, month, day) = Self.civil(daysSinceEpoch: days.quotient)
        guard (1583 ... 9999).contains(year) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func append(_ value: Int, width: Int) {
            var digits = [UInt8](repeating: 48, count: width)
            var rest = value
            for index in stride(from: width - 1, through: 0, by: -1) { digits[index] = UInt8(48 + rest % 10); rest /= 10 }
            out += digits
        }
        for token in tokens {
            switch token {
            case .literal(let byte): out.append(byte)
            case .year: append(year, width: 4)
            case .month: append(month, width: 2)
            case .monthName: out += Self.monthNames[month - 1]
            case .day: append(day, width: 2)
            case .weekdayName: out += Self.weekdayNames[(days.quotient % 7 + 11) % 7]
            case .hour: append(days.remainder / 3600, width: 2)
            case .minute: append(days.remainder / 60 % 60, width: 2)
            case .second: append(days.remainder % 60, width: 2)
            case .fraction(let count):
                var value = seconds.remainder
                if count < 3 { for _ in count ..< 3 { value /= 10 } } else { for _ in 3 ..< count { value *= 10 } }
                append(value, width: count)
            case .zone(let colon):
                if colon, offset == 0 { out.append(UInt8(ascii: "Z")); continue }
                out.append(offset < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
                append(abs(offset) / 3600, width: 2)
                if colon { out.append(UInt8(ascii: ":")) }
                append(abs(offset) / 60 % 60, width: 2)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Calendar arithmetic (Gregorian, as ICU's calendar is from 1583 on)

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day count from 1970-01-01 (civil_from_days).
    private static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
