// Strata: typed objects, the Realm API, JSON coding and results controllers, built on
// StrataStorage. `import Strata` is all an app needs: it re-exports the engine and
// Foundation (for Date, UUID, #Predicate and SortDescriptor).
//
//   Schema/         what a model declares and a store remembers
//   Model/          Object, @Persisted, List, schema discovery, copies
//   Rows/           FieldValue and the row format
//   Realm/          Realm, configuration, writes, the shared store, indexes
//   Query/          Results and predicate analysis
//   Notifications/  realm, collection and object observers
//   Handoff/        PrimaryKeyValue and ThreadSafeReference
//   Migration/      schema migrations
//   Columns/        custom column types (ColumnCodable)

@_exported import Foundation
@_exported import StrataStorage
