// The string query language: a subset of Realm Query Language / NSPredicate format, for
// Linux where `NSPredicate(format:)` does not exist. This file reads the text into a tree
// (recursive descent, one token of look-ahead); QueryCompiler+Text.swift checks it against
// a schema and turns it into an evaluation on stored fields.
//
//   query      := or-expr [SORT '(' key-path (ASC|DESC)? {',' …} ')'] [LIMIT '(' int ')']
//   or-expr    := and-expr {(OR | '||') and-expr}
//   and-expr   := not-expr {(AND | '&&') not-expr}
//   not-expr   := (NOT | '!') not-expr | '(' or-expr ')' | TRUEPREDICATE | FALSEPREDICATE | comparison
//   comparison := [ANY|SOME|ALL|NONE] operand op operand
//               | operand BETWEEN operand        (a two-element list or argument)
//               | operand IN operand             (a list literal or argument)
//   op         := == | = | != | <> | < | <= | =< | > | >= | => | BEGINSWITH | ENDSWITH | CONTAINS | LIKE
//                 each optionally followed by [c], [d] or [cd]
//   operand    := key-path | literal | '{' operand {',' operand} '}' | %@ | %d | %i | %f | %K | $n
//   key-path   := name {'.' name} with @count, @min, @max, @sum, @avg as the last or
//                 second-to-last component (`tags.@count`, `phones.@max.number`)
//   literal    := number | 'string' | "string" | TRUE | FALSE | NIL | NULL
//
// Keywords are case-insensitive. Every error names its offset (in characters) and what
// was expected there.

import Foundation

/// A string query, parsed: its condition, and the sort and limit it ends with.
struct TextQuery {
    var condition: Condition
    var sort: [(keyPath: [String], ascending: Bool, offset: Int)] = []
    var limit: Int?

    /// A boolean condition.
    indirect enum Condition {
        case constant(Bool)
        case and(Condition, Condition)
        case or(Condition, Condition)
        case not(Condition)
        case compare(Operand, Operator, Operand, options: StringOptions, quantifier: Quantifier?, offset: Int)
        case between(Operand, Operand, quantifier: Quantifier?, offset: Int)
        case within(Operand, Operand, quantifier: Quantifier?, offset: Int)
    }

    /// One side of a comparison.
    enum Operand {
        case keyPath(KeyPath)
        case value(Any?, offset: Int)
        case list([Operand], offset: Int)

        var offset: Int {
            switch self {
            case .keyPath(let path): return path.offset
            case .value(_, let offset), .list(_, let offset): return offset
            }
        }
    }

    /// A key path: property names, and an aggregate over the list it reaches.
    struct KeyPath {
        var components: [String]
        var aggregate: Aggregate?
        /// Components after the aggregate (`phones.@max.number` → ["number"]).
        var aggregated: [String] = []
        var offset: Int
        var text: String { (components + (aggregate.map { ["@\($0.rawValue)"] } ?? []) + aggregated).joined(separator: ".") }
    }

    enum Aggregate: String { case count, min, max, sum, avg }
    enum Quantifier { case any, all, none }
    enum Operator: String {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE"
        var isStringOperator: Bool { [.beginsWith, .endsWith, .contains, .like].contains(self) }
    }
    struct StringOptions: OptionSet {
        let rawValue: Int
        static let caseInsensitive = StringOptions(rawValue: 1)
        static let diacriticInsensitive = StringOptions(rawValue: 2)
    }
}

/// Reads a query string into a ``TextQuery``.
struct TextQueryParser {
    private enum Token: Equatable {
        case name(String)              // identifiers and keywords
        case aggregate(String)         // @count …
        case string(String)
        case number(String)
        case symbol(String)            // operators and punctuation
        case placeholder(Character)    // %@ %d %i %f %K
        case positional(Int)           // $0 …
        case end
    }

    private let text: String
    private var tokens: [(token: Token, offset: Int)] = []
    private var position = 0
    private let arguments: [Any?]
    private var nextArgument = 0
    /// Conditions and value lists parsed so far: the parse, the compiler and evaluation all
    /// recurse once per level, so bounding their number bounds the stack a query can take.
    private var nodes = 0
    static let maxNodes = 1000

    init(_ text: String, arguments: [Any?]) throws {
        self.text = text
        self.arguments = arguments
        tokens = try Self.tokenize(text)
    }

    /// Parses the whole text.
    static func parse(_ text: String, arguments: [Any?]) throws -> TextQuery {
        var parser = try TextQueryParser(text, arguments: arguments)
        return try parser.parseQuery()
    }

    // MARK: Errors

    static func error(_ text: String, _ offset: Int, _ reason: String) -> RealmError {
        .invalidQuery(query: text, offset: offset, reason: reason)
    }

    private func error(_ reason: String, at offset: Int? = nil) -> RealmError {
        Self.error(text, offset ?? tokens[position].offset, reason)
    }

    private var found: String {
        switch tokens[position].token {
        case .name(let name): return "'\(name)'"
        case .aggregate(let name): return "'@\(name)'"
        case .string(let string): return "the string '\(string)'"
        case .number(let number): return "the number \(number)"
        case .symbol(let symbol): return "'\(symbol)'"
        case .placeholder(let c): return "'%\(c)'"
        case .positional(let n): return "'$\(n)'"
        case .end: return "the end of the query"
        }
    }

    // MARK: Lexing

    private static func tokenize(_ text: String) throws -> [(token: Token, offset: Int)] {
        let characters = Array(text)
        var tokens: [(Token, Int)] = []
        var i = 0
        while i < characters.count {
            let c = characters[i]
            let start = i
            if c.isWhitespace { i += 1; continue }
            let token: Token
            if isNameStart(c) {
                token = lexName(characters, &i)
            } else if c == "@" {
                token = try lexAggregate(characters, &i, text)
            } else if c.isNumber || (c == "-" && i + 1 < characters.count && characters[i + 1].isNumber && Self.valueMayStart(after: tokens.last?.0)) || (c == "." && i + 1 < characters.count && characters[i + 1].isNumber) {
                token = lexNumber(characters, &i)
            } else if c == "'" || c == "\"" {
                token = try lexString(quote: c, characters, &i, text)
            } else if c == "%" {
                token = try lexPlaceholder(characters, &i, text)
            } else if c == "$" {
                token = try lexPositional(characters, &i, text)
            } else {
                token = try lexSymbol(c, characters, &i, text)
            }
            tokens.append((token, start))
        }
        tokens.append((.end, characters.count))
        return tokens
    }

    @inline(__always)
    private static func isNameStart(_ c: Character) -> Bool { c.isLetter || c == "_" }

    @inline(__always)
    private static func isNamePart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }

    // Each lexer below reads the token starting at `i` (its first character already
    // recognized) and moves `i` past it; `text` is the query, for errors. Always inlined:
    // tokenize stays one loop, with no call per token.

    /// An identifier or keyword.
    @inline(__always)
    private static func lexName(_ characters: [Character], _ i: inout Int) -> Token {
        let start = i
        while i < characters.count, isNamePart(characters[i]) { i += 1 }
        return .name(String(characters[start..<i]))
    }

    /// `@` and an aggregate's name.
    @inline(__always)
    private static func lexAggregate(_ characters: [Character], _ i: inout Int, _ text: String) throws -> Token {
        let start = i
        i += 1
        while i < characters.count, isNamePart(characters[i]) { i += 1 }
        guard i > start + 1 else { throw error(text, start, "expected an aggregate name after '@' (@count, @min, @max, @sum, @avg)") }
        return .aggregate(String(characters[start + 1..<i]))
    }

    /// A number (a digit, a '-' before a digit where a value may start, or a '.' before a
    /// digit starts one): digits, '.', and an exponent (its sign only right after 'e' or 'E').
    @inline(__always)
    private static func lexNumber(_ characters: [Character], _ i: inout Int) -> Token {
        let start = i
        i += 1
        while i < characters.count, characters[i].isNumber || characters[i] == "." || characters[i] == "e" || characters[i] == "E"
                || ((characters[i] == "-" || characters[i] == "+") && (characters[i - 1] == "e" || characters[i - 1] == "E")) {
            i += 1
        }
        return .number(String(characters[start..<i]))
    }

    /// A string in `quote`s (single or double, the one at `i`), with \n, \t, \r and \0 escapes
    /// (a backslash before any other character is that character).
    @inline(__always)
    private static func lexString(quote: Character, _ characters: [Character], _ i: inout Int, _ text: String) throws -> Token {
        let start = i
        var value = ""
        i += 1
        var closed = false
        while i < characters.count {
            let d = characters[i]
            if d == quote { closed = true; i += 1; break }
            if d == "\\" {
                guard i + 1 < characters.count else { break }
                let e = characters[i + 1]
                switch e {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "0": value.append("\0")
                default: value.append(e)
                }
                i += 2
                continue
            }
            value.append(d)
            i += 1
        }
        guard closed else { throw error(text, start, "the string that starts here is not closed with \(quote)") }
        return .string(value)
    }

    /// `%@`, `%d`, `%i`, `%f` or `%K`.
    @inline(__always)
    private static func lexPlaceholder(_ characters: [Character], _ i: inout Int, _ text: String) throws -> Token {
        guard i + 1 < characters.count, "@dKif".contains(characters[i + 1]) else {
            throw error(text, i, "expected %@, %d, %i, %f or %K")
        }
        let placeholder = characters[i + 1]
        i += 2
        return .placeholder(placeholder)
    }

    /// `$` and an argument number.
    @inline(__always)
    private static func lexPositional(_ characters: [Character], _ i: inout Int, _ text: String) throws -> Token {
        let start = i
        i += 1
        while i < characters.count, characters[i].isNumber { i += 1 }
        guard let n = Int(String(characters[start + 1..<i])) else { throw error(text, start, "expected an argument number after '$' ($0, $1, …)") }
        return .positional(n)
    }

    /// An operator or punctuation (`c`, the character at `i`): two characters where they
    /// make one, else one.
    @inline(__always)
    private static func lexSymbol(_ c: Character, _ characters: [Character], _ i: inout Int, _ text: String) throws -> Token {
        let two = i + 1 < characters.count ? String(characters[i...i + 1]) : ""
        if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
            i += 2
            return .symbol(two)
        }
        guard "=<>!(){},.[]".contains(c) else { throw error(text, i, "unexpected character '\(c)'") }
        i += 1
        return .symbol(String(c))
    }

    /// A '-' followed by digits is a negative number where a value may start.
    private static func valueMayStart(after token: Token?) -> Bool {
        switch token {
        case nil, .symbol?: return true
        case .name(let name)?: return ["AND", "OR", "NOT", "BETWEEN", "IN", "LIMIT"].contains(name.uppercased())
        default: return false
        }
    }

    // MARK: Parsing

    private var current: Token { tokens[position].token }
    private var offset: Int { tokens[position].offset }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .name(let name) = current { return name.uppercased() == keyword }
        return false
    }

    private mutating func accept(keyword: String) -> Bool {
        guard isKeyword(keyword) else { return false }
        advance()
        return true
    }

    private mutating func accept(symbol: String) -> Bool {
        guard current == .symbol(symbol) else { return false }
        advance()
        return true
    }

    private mutating func expect(symbol: String, _ what: String) throws {
        guard accept(symbol: symbol) else { throw error("expected \(what), found \(found)") }
    }

    mutating func parseQuery() throws -> TextQuery {
        guard current != .end else { throw error("the query is empty: expected a condition") }
        var query = TextQuery(condition: try parseOr())
        if accept(keyword: "SORT") {
            try expect(symbol: "(", "'(' after SORT")
            repeat {
                let at = offset
                let path = try parseKeyPath(allowAggregate: false)
                var ascending = true
                if accept(keyword: "DESC") || accept(keyword: "DESCENDING") { ascending = false } else if accept(keyword: "ASC") || accept(keyword: "ASCENDING") {}
                query.sort.append((path.components, ascending, at))
            } while accept(symbol: ",")
            try expect(symbol: ")", "',' or ')' in SORT(…)")
        }
        if accept(keyword: "LIMIT") {
            try expect(symbol: "(", "'(' after LIMIT")
            guard case .number(let digits) = current, let limit = Int(digits), limit >= 0 else {
                throw error("expected a non-negative whole number in LIMIT(…), found \(found)")
            }
            advance()
            query.limit = limit
            try expect(symbol: ")", "')' after the limit")
        }
        guard current == .end else {
            throw error("expected AND, OR, SORT, LIMIT or the end of the query, found \(found)")
        }
        guard nextArgument <= arguments.count else { throw error("the query uses more arguments than the \(arguments.count) given", at: 0) }
        return query
    }

    private mutating func parseOr() throws -> TextQuery.Condition {
        var condition = try parseAnd()
        while accept(keyword: "OR") || accept(symbol: "||") {
            condition = .or(condition, try parseAnd())
        }
        return condition
    }

    private mutating func parseAnd() throws -> TextQuery.Condition {
        var condition = try parseNot()
        while accept(keyword: "AND") || accept(symbol: "&&") {
            condition = .and(condition, try parseNot())
        }
        return condition
    }

    private mutating func countNode() throws {
        nodes += 1
        guard nodes <= Self.maxNodes else {
            throw error("the query has more than \(Self.maxNodes) conditions and value lists (use IN with a list argument for long alternatives)")
        }
    }

    private mutating func parseNot() throws -> TextQuery.Condition {
        try countNode()
        if accept(keyword: "NOT") || accept(symbol: "!") { return .not(try parseNot()) }
        if accept(keyword: "TRUEPREDICATE") { return .constant(true) }
        if accept(keyword: "FALSEPREDICATE") { return .constant(false) }
        if current == .symbol("(") {
            // A parenthesized condition, unless it is a value list's brace (handled in operands).
            advance()
            let inner = try parseOr()
            try expect(symbol: ")", "')' to close the '('")
            return inner
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> TextQuery.Condition {
        let start = offset
        var quantifier: TextQuery.Quantifier?
        if accept(keyword: "ANY") || accept(keyword: "SOME") { quantifier = TextQuery.Quantifier.any }
        else if accept(keyword: "ALL") { quantifier = TextQuery.Quantifier.all }
        else if accept(keyword: "NONE") { quantifier = TextQuery.Quantifier.none }
        let lhs = try parseOperand()
        if accept(keyword: "BETWEEN") {
            return .between(lhs, try parseOperand(), quantifier: quantifier, offset: start)
        }
        if accept(keyword: "IN") {
            return .within(lhs, try parseOperand(), quantifier: quantifier, offset: start)
        }
        let op = try parseOperator()
        let options = try parseOptions()
        let rhs = try parseOperand()
        return .compare(lhs, op, rhs, options: options, quantifier: quantifier, offset: start)
    }

    private mutating func parseOperator() throws -> TextQuery.Operator {
        switch current {
        case .symbol("=="), .symbol("="): advance(); return .equal
        case .symbol("!="), .symbol("<>"): advance(); return .notEqual
        case .symbol("<"): advance(); return .less
        case .symbol("<="), .symbol("=<"): advance(); return .lessOrEqual
        case .symbol(">"): advance(); return .greater
        case .symbol(">="), .symbol("=>"): advance(); return .greaterOrEqual
        case .name(let name):
            if let op = TextQuery.Operator(rawValue: name.uppercased()), op.isStringOperator {
                advance()
                return op
            }
        default: break
        }
        throw error("expected a comparison (==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, IN, BETWEEN), found \(found)")
    }

    private mutating func parseOptions() throws -> TextQuery.StringOptions {
        guard accept(symbol: "[") else { return [] }
        guard case .name(let letters) = current else { throw error("expected c, d or cd inside [ ], found \(found)") }
        var options: TextQuery.StringOptions = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            default: throw error("unknown string option '\(letter)': expected c or d")
            }
        }
        advance()
        try expect(symbol: "]", "']' after the string options")
        return options
    }

    private mutating func parseOperand() throws -> TextQuery.Operand {
        let at = offset
        switch current {
        case .name(let name):
            switch name.uppercased() {
            case "TRUE", "YES": advance(); return .value(true, offset: at)
            case "FALSE", "NO": advance(); return .value(false, offset: at)
            case "NIL", "NULL": advance(); return .value(nil, offset: at)
            default: return .keyPath(try parseKeyPath(allowAggregate: true))
            }
        case .aggregate:
            throw error("expected a property name before \(found)")
        case .string(let string):
            advance()
            return .value(string, offset: at)
        case .number(let digits):
            advance()
            if let int = Int64(digits) { return .value(int, offset: at) }
            if let double = Double(digits), double.isFinite { return .value(double, offset: at) }
            throw error("'\(digits)' is not a number", at: at)
        case .symbol("{"):
            try countNode()
            advance()
            var items: [TextQuery.Operand] = []
            if !accept(symbol: "}") {
                repeat { items.append(try parseOperand()) } while accept(symbol: ",")
                try expect(symbol: "}", "',' or '}' in the list")
            }
            return .list(items, offset: at)
        case .placeholder(let kind):
            advance()
            let value = try takeArgument(at: at)
            switch kind {
            case "K":
                guard let name = value as? String else { throw error("%K needs a key path string argument, got \(describe(value))", at: at) }
                let components = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard components.allSatisfy({ !$0.isEmpty }) else { throw error("'\(name)' is not a key path", at: at) }
                return .keyPath(TextQuery.KeyPath(components: components, aggregate: nil, offset: at))
            case "d", "i":
                guard let int = Self.integer(value) else { throw error("%\(kind) needs an integer argument, got \(describe(value))", at: at) }
                return .value(int, offset: at)
            case "f":
                guard let double = Self.double(value) else { throw error("%f needs a number argument, got \(describe(value))", at: at) }
                return .value(double, offset: at)
            default:
                return .value(value, offset: at)
            }
        case .positional(let n):
            advance()
            guard n < arguments.count else { throw error("$\(n) refers to argument \(n), but \(arguments.count) were given", at: at) }
            return .value(arguments[n], offset: at)
        default:
            throw error("expected a property, a value or an argument, found \(found)")
        }
    }

    private mutating func takeArgument(at: Int) throws -> Any? {
        guard nextArgument < arguments.count else {
            throw error("this placeholder needs argument \(nextArgument + 1), but \(arguments.count) were given", at: at)
        }
        defer { nextArgument += 1 }
        return arguments[nextArgument]
    }

    private func describe(_ value: Any?) -> String { value.map { "\(type(of: $0))" } ?? "nil" }

    static func integer(_ value: Any?) -> Int64? {
        switch value {
        case let v as Int: return Int64(v)
        case let v as Int64: return v
        case let v as Int32: return Int64(v)
        case let v as Int16: return Int64(v)
        case let v as Int8: return Int64(v)
        case let v as UInt8: return Int64(v)
        case let v as UInt16: return Int64(v)
        case let v as UInt32: return Int64(v)
        default: return nil
        }
    }

    static func double(_ value: Any?) -> Double? {
        if let int = integer(value) { return Double(int) }
        switch value {
        case let v as Double: return v
        case let v as Float: return Double(v)
        default: return nil
        }
    }

    private mutating func parseKeyPath(allowAggregate: Bool) throws -> TextQuery.KeyPath {
        let at = offset
        var path = TextQuery.KeyPath(components: [], aggregate: nil, offset: at)
        guard case .name(let first) = current else { throw error("expected a property name, found \(found)") }
        path.components.append(first)
        advance()
        while accept(symbol: ".") {
            switch current {
            case .name(let name):
                if path.aggregate == nil { path.components.append(name) } else { path.aggregated.append(name) }
                advance()
            case .aggregate(let name):
                guard allowAggregate else { throw error("an aggregate (@\(name)) cannot be used here") }
                guard path.aggregate == nil else { throw error("only one aggregate per key path") }
                guard let aggregate = TextQuery.Aggregate(rawValue: name.lowercased()) else {
                    throw error("unknown aggregate '@\(name)': expected @count, @min, @max, @sum or @avg")
                }
                path.aggregate = aggregate
                advance()
            default:
                throw error("expected a property name after '.', found \(found)")
            }
        }
        if path.aggregated.count > 1 { throw error("only one property may follow @\(path.aggregate!.rawValue)", at: at) }
        return path
    }
}
