// Unmanaged copies of objects, and merging an edited copy back.

/// Copies a graph of objects once each (cycle-safe).
public struct DeepCopier {
    /// Keyed by object equality: a managed object read twice is two instances of one row.
    private var copies: [Object: Object] = [:]

    mutating func copy(_ object: Object) -> Object {
        if let done = copies[object] { return done }
        let copy = type(of: object).init()
        copies[object] = copy
        object.fillCopy(copy, copier: &self)
        return copy
    }
}

extension Object {
    /// An unmanaged copy holding every non-link property except the primary key, which
    /// keeps the class's initial value (Realm+JSON's rule: "shallowCopy no longer maintains
    /// an object's primary key"); links and lists of objects are left empty, embedded
    /// objects (part of the object's value) are copied, linking objects are empty. A copy
    /// to edit and merge back (``mergeProperties(from:)``), or to add as a new object.
    public func shallowCopy() -> Self {
        let copy = Self()
        var copier: DeepCopier?
        fillCopy(copy, copier: &copier, primaryKey: false)
        return copy
    }

    /// An unmanaged copy with links and lists copied recursively; an object reached twice is
    /// copied once, so cycles are preserved.
    public func deepCopy() -> Self {
        var copier = DeepCopier()
        return copier.copy(self) as! Self
    }

    fileprivate func fillCopy(_ copy: Object, copier: inout DeepCopier) {
        var optional: DeepCopier? = copier
        fillCopy(copy, copier: &optional)
        copier = optional!
    }

    /// Copies this object's values into `copy`'s slots; links only when `copier` is given.
    fileprivate func fillCopy(_ copy: Object, copier: inout DeepCopier?, primaryKey: Bool = true) {
        let info = ObjectType.info(for: type(of: self))
        for (index, property) in info.schema.properties.enumerated() {
            if !primaryKey && property.isPrimaryKey { continue }
            switch copy._slots[index] {
            case .value:
                if let state = _state {
                    copy._slots[index] = .value(state.field(index))
                } else {
                    copy._slots[index] = _slots[index]
                }
            case .object:
                guard let target = self[property.name] as? Object else { continue }
                if property.kind == .embedded {
                    // An embedded object is part of this one's value: always copied.
                    var own = DeepCopier()
                    copy._slots[index] = .object(copier == nil ? own.copy(target) : copier!.copy(target))
                    continue
                }
                guard copier != nil else { continue }
                copy._slots[index] = .object(copier!.copy(target))
            case .list(let empty):
                let source: _ListBase
                if let state = _state {
                    guard let managed = _listValue(state: state, index: index) else { continue }
                    source = managed
                } else if case .list(let list) = _slots[index] {
                    source = list
                } else {
                    continue
                }
                if property.kind == .embedded {
                    var own = DeepCopier()
                    copy._slots[index] = .list(copier == nil ? source._unmanagedCopy(&own) : source._unmanagedCopy(&copier!))
                } else if property.kind == .object {
                    guard copier != nil else { continue }
                    copy._slots[index] = .list(source._unmanagedCopy(&copier!))
                } else if property.kind != .linkingObjects {
                    try? empty._replaceAll(withAny: source._anyValue, property: property.name)
                }
            }
        }
    }

    /// The managed list at `index`, read through the generic accessor of the slot's type.
    private func _listValue(state: ObjectState, index: Int) -> _ListBase? {
        guard case .list(let prototype) = type(of: self).init()._slots[index] else { return nil }
        return prototype._managedCopy(state: state, index: index)
    }

    /// Copies every property that is not a link, a list of objects, linking objects or the
    /// primary key from `other` (managed or not); embedded objects are copied as values.
    /// Inside a write when this object is managed.
    public func mergeProperties(from other: Object) {
        let info = ObjectType.info(for: type(of: self))
        precondition(type(of: other) == type(of: self) || ObjectType.info(for: type(of: other)).schema.className == info.schema.className,
                     "mergeProperties(from:) needs an object of the same type")
        for (index, property) in info.schema.properties.enumerated()
        where property.kind != .object && property.kind != .linkingObjects && !property.isPrimaryKey {
            var value = other[property.name]
            if property.kind == .embedded {
                // Values, not the other object's embedded objects (they have one parent).
                if let object = value as? Object { value = object.deepCopy() }
                if let objects = value as? [Object] { value = objects.map { $0.deepCopy() } }
            }
            do {
                try setDynamicValue(value, index: index)
            } catch {
                preconditionFailure("\(error)")
            }
        }
    }
}
