// Strata: typed objects, the Realm API, JSON coding and results controllers, built on
// StrataStorage. Today it holds the custom column types (Columns/) and re-exports the
// engine, so that `import Strata` is all an app needs.

@_exported import StrataStorage
