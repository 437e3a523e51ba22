// Strata: typed objects, the Realm API, JSON coding and results controllers, built on
// StrataStorage. The object layer arrives in later work; today the module re-exports the
// engine so that `import Strata` is all an app needs.

@_exported import StrataStorage
