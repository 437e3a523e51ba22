// Strata: typed objects, the Realm API, JSON coding and results controllers, built on
// StrataStorage. `import Strata` is all an app needs: it re-exports the engine, the JSON
// module and Foundation (for Date, UUID, #Predicate and SortDescriptor).
//
//   Schema/             what a model declares and a store remembers
//   Model/              Object, @Persisted, List, Map, MutableSet, schema discovery, copies
//   Rows/               FieldValue, the row format, engine keys built from values
//   Layout/             which engine tables hold objects and indexes; index records
//   Realm/              Realm, configuration, writes, confinement, the shared store
//   Query/              Results, predicate analysis; Text/: the string query language
//   Notifications/      the change log, realm, collection and object observers
//   Concurrency/        frozen values
//   Handoff/            PrimaryKeyValue and ThreadSafeReference
//   Migration/          schema migrations
//   Columns/            custom column types (ColumnCodable)
//   Coding/             the JSON mapping engine and its three front ends
//   ResultsController/  RealmRequest and RealmResultsController
//   Inspection/         objects through the stored schema alone (the tool, the studio)

@_exported import Foundation
@_exported import StrataStorage
@_exported import StrataJSON
