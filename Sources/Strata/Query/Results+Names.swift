// Results+Names: Realm Swift's aggregates that name properties by string
// (`sum(ofProperty: "age")`), read from columns or rows when the query allows. The key-path
// forms in Results.swift are the typed equivalents; `objects(at:)`, `index(matching:)` and
// `value(forKey:)` are every collection's (RealmCollection.swift).

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
        let fields = query.storedValues(of: index, in: managingRealm)
            ?? map { object in object._state.map { $0.field(index) } ?? .null }
        return fields.filter { $0 != .null }
    }

    /// The values of property `name` as `T`, nil ones left out; traps when a value is not a
    /// `T`, naming the property (Realm raises for a property of another type).
    private func values<T: _PersistableValue>(ofProperty name: String, as type: T.Type, _ operation: String) -> [T] {
        nonNilFields(ofProperty: name, operation).map { field in
            guard let value = T._fromField(field, in: managingRealm) else {
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
}
