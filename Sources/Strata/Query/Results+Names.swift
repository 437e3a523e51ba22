// Results+Names: Realm Swift's collection API that names properties by string
// (`sum(ofProperty: "age")`, `value(forKey:)`) and reads positions in bulk
// (`objects(at:)`, `index(matching:)`), as ported code calls them. The key-path forms in
// Results.swift are the typed equivalents.

import Foundation

extension Results {
    /// The stored property `name` of `Element`, or a trap naming it, as Realm raises for a
    /// property the type lacks.
    private func storedProperty(_ name: String, _ operation: String) -> Int {
        let schema = query.bound.schema
        guard let index = schema.index(of: name), schema.properties[index].kind != .linkingObjects,
              !schema.properties[index].isList, !schema.properties[index].isMap else {
            preconditionFailure("\(operation): \(query.bound.className) has no stored single-value property '\(name)'")
        }
        return index
    }

    /// The values of property `name` of the matching objects, in no particular order, nil
    /// ones left out: read from columns or rows when the query allows, else from the objects.
    private func nonNilFields(ofProperty name: String, _ operation: String) -> [FieldValue] {
        let index = storedProperty(name, operation)
        let fields = query.storedValues(of: index, in: realm)
            ?? map { object in object._state.map { $0.field(index) } ?? .null }
        return fields.filter { $0 != .null }
    }

    /// The values of property `name` as `T`, nil ones left out; traps when a value is not a
    /// `T`, naming the property (Realm raises for a property of another type).
    private func values<T: _PersistableValue>(ofProperty name: String, as type: T.Type, _ operation: String) -> [T] {
        nonNilFields(ofProperty: name, operation).map { field in
            guard let value = T._fromField(field, in: realm) else {
                preconditionFailure("\(operation): \(query.bound.className).\(name) holds \(field.kindName), not \(T.self)")
            }
            return value
        }
    }

    /// The least value of the stored property `name` (Realm Swift's string form of
    /// ``min(of:)``); nil when no object has a value. The result type says what to read:
    /// `let youngest: Int? = people.min(ofProperty: "age")`.
    public func min<T: _PersistableValue & Comparable>(ofProperty name: String) -> T? {
        values(ofProperty: name, as: T.self, "min(ofProperty:)").min()
    }

    /// The greatest value of the stored property `name`; nil when no object has a value.
    public func max<T: _PersistableValue & Comparable>(ofProperty name: String) -> T? {
        values(ofProperty: name, as: T.self, "max(ofProperty:)").max()
    }

    /// The sum of the stored numeric property `name` (zero when there are no values).
    public func sum<T: _PersistableValue & AdditiveArithmetic>(ofProperty name: String) -> T {
        values(ofProperty: name, as: T.self, "sum(ofProperty:)").reduce(.zero, +)
    }

    /// The mean of the stored numeric property `name` (integers or floating point), as the
    /// floating-point type asked for; nil when no object has a value.
    public func average<T: BinaryFloatingPoint>(ofProperty name: String) -> T? {
        let numbers = nonNilFields(ofProperty: name, "average(ofProperty:)").map { field -> Double in
            switch field {
            case .int(let v): return Double(v)
            case .double(let v): return v
            case .float(let v): return Double(v)
            default: preconditionFailure("average(ofProperty:): \(query.bound.className).\(name) holds \(field.kindName), not a number")
            }
        }
        return numbers.isEmpty ? nil : T(numbers.reduce(0, +) / Double(numbers.count))
    }

    /// The objects at `indexes`, in ascending order (Realm Swift's `objects(at:)`); traps
    /// for an index past the end, as Realm raises.
    public func objects(at indexes: IndexSet) -> [Element] {
        if let last = indexes.last {
            precondition(last < count, "objects(at:): index \(last) is out of bounds (\(count) objects)")
        }
        return indexes.map { self[$0] }
    }

    /// The position of the first object that matches `predicate`, or nil.
    public func index(matching predicate: Predicate<Element>) -> Int? {
        firstIndex { (try? predicate.evaluate($0)) == true }
    }

    /// The position of the first object that matches a string query (Realm Query Language /
    /// NSPredicate format, as ``filter(_:_:)``), or nil; traps on a query that cannot be
    /// read, as `filter` does.
    public func index(matching predicateFormat: String, _ args: Any...) -> Int? {
        let matching: Results<Element>
        do {
            matching = try filter(query: predicateFormat, arguments: args.map { $0 })
        } catch {
            preconditionFailure("\(error)")
        }
        guard let first = matching.first else { return nil }
        return firstIndex { $0.isSameObject(as: first) }
    }

    /// Each object's value of the property `key`, in order, as an array (Realm Swift's
    /// key-value coding on collections): plain values, objects for links, arrays for lists.
    public func value(forKey key: String) -> Any? {
        map { $0[key] } as [Any?]
    }

    /// Sets the property `key` of every object to `value` (inside a write, as any change).
    public func setValue(_ value: Any?, forKey key: String) {
        for object in self { object[key] = value }
    }
}
