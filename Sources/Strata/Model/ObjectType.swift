// ObjectType: what the object layer learns about a model class once, by reflecting on a
// fresh instance: its schema and where each property sits. Also maps key paths (from
// predicates and sort descriptors) to property positions by reading them on a probe.

import Foundation

/// Runtime information about one model class.
final class ObjectType: @unchecked Sendable {
    let type: Object.Type
    /// The schema as the class declares it (table number 0 until bound to a store).
    let schema: ObjectSchema
    let primaryKeyIndex: Int?
    /// Per property: whether a stored field can be read as the declared Swift type.
    let readers: [(FieldValue) -> Bool]
    /// Per property: the class it links to or embeds, if any.
    let objectTypes: [Object.Type?]
    /// Key paths already mapped to a property position.
    private let keyPaths = Locked<[AnyKeyPath: Int?]>([:])

    private init(type: Object.Type) throws {
        self.type = type
        let prototype = type.init()
        var found: [(Int, PropertySchema, (FieldValue) -> Bool, Object.Type?)] = []
        let rawJSON = Set(type.realmCodableRawJsonSubstrings)
        var mirror: Mirror? = Mirror(reflecting: prototype)
        while let current = mirror {
            for child in current.children {
                guard let descriptor = child.value as? PersistedDescriptor, var label = child.label else { continue }
                if label.hasPrefix("_") { label.removeFirst() }
                var property = descriptor.schemaTemplate
                property.name = label
                let index = descriptor.index - prototype._slotBase
                if property.kind == .linkingObjects, prototype._slots.indices.contains(index), case .list(let slot) = prototype._slots[index],
                   let linking = slot as? _LinkingObjectsBase {
                    property.originProperty = linking.originProperty
                }
                property.isPrimaryKey = descriptor.isPrimaryKey
                property.isIndexed = descriptor.isIndexed && !descriptor.isPrimaryKey
                // Only a String can hold JSON text (RealmCoder stores the subtree's text).
                property.isRawJSON = rawJSON.contains(label) && property.kind == .string && !property.isList && !property.isMap
                found.append((index, property, descriptor.canRead, descriptor.objectType))
            }
            mirror = current.superclassMirror
        }
        found.sort { $0.0 < $1.0 }
        let className = type.className
        guard found.map(\.0) == Array(0 ..< prototype._slots.count) else {
            throw RealmError.invalidSchema("\(className): its @Persisted properties could not be located: an initializer assigns one of them before super.init(), which registers it twice; assign it after super.init()")
        }
        let properties = found.map(\.1)
        readers = found.map(\.2)
        objectTypes = found.map(\.3)
        let keys = properties.filter(\.isPrimaryKey)
        guard keys.count <= 1 else {
            throw RealmError.invalidSchema("\(className) declares more than one primary key: \(keys.map(\.name).joined(separator: ", "))")
        }
        if let key = keys.first {
            guard !key.isList, !key.isMap, Schema.primaryKeyKinds.contains(key.kind) else {
                throw RealmError.invalidSchema("\(className).\(key.name): a primary key must be Int, Int8/16/32/64, String, UUID or ObjectId, not \(key.typeDescription)")
            }
        }
        for property in properties where property.isIndexed {
            guard !property.isList, !property.isMap, ![.object, .embedded, .linkingObjects, .mixed].contains(property.kind) else {
                throw RealmError.invalidSchema("\(className).\(property.name): \(property.typeDescription) cannot be indexed")
            }
        }
        guard properties.count < 255 else {
            throw RealmError.invalidSchema("\(className) has \(properties.count) properties; at most 254 are supported")
        }
        schema = ObjectSchema(className: className, properties: properties, isEmbedded: type is EmbeddedObject.Type)
        if let problem = schema.propertiesProblem() { throw RealmError.invalidSchema(problem) }
        primaryKeyIndex = properties.firstIndex(where: \.isPrimaryKey)
    }

    private static let registry = Locked<[ObjectIdentifier: ObjectType]>([:])

    /// The information for `type`, discovered on first use.
    static func info(for type: Object.Type) -> ObjectType {
        do {
            return try discover(type)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The information for `type`, or the reason its declaration cannot be used.
    static func discover(_ type: Object.Type) throws -> ObjectType {
        let id = ObjectIdentifier(type)
        if let known = registry.withLock({ $0[id] }) { return known }
        let info = try ObjectType(type: type)
        return registry.withLock { registry in
            if let known = registry[id] { return known }
            registry[id] = info
            return info
        }
    }

    /// The position of the property `keyPath` reads, or nil if it is not a single stored property.
    func propertyIndex(for keyPath: AnyKeyPath) -> Int? {
        if let known = keyPaths.withLock({ $0[keyPath] }) { return known }
        let prototype = type.init()
        let probe = PropertyProbe()
        prototype._probe = probe
        _ = prototype[keyPath: keyPath]
        // Only the property's own key path counts: a computed property that reads one
        // stored property (`var lower: String { city.lowercased() }`) is not that property.
        let index: Int? = probe.reads.count == 1 && probe.reads[0].keyPath == keyPath ? probe.reads[0].index : nil
        keyPaths.withLock { $0[keyPath] = index }
        return index
    }
}

