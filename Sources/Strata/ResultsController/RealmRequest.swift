// RealmRequest: a query (type, predicate, sort) bound to a realm, as RealmResultsController
// takes it. Executing it gives the same live Results as realm.objects(_:).filter.sorted.

/// A fetch request: the objects of `T` in `realm` matching `predicate`, in the order of
/// `sortDescriptors`.
///
/// ```swift
/// let request = RealmRequest<TaskModel>(predicate: #Predicate { $0.id != 0 }, realm: realm,
///                                       sortDescriptors: [SortDescriptor(\.projectID), SortDescriptor(\.name)])
/// let objects: Results<TaskModel> = request.execute()
/// ```
public struct RealmRequest<T: Object> {
    /// The filter (nil: every object).
    public let predicate: Predicate<T>?
    /// The filter as a string query (RealmResultsController's seed: `"id != 0"`), if the
    /// request was made with one.
    public let predicateFormat: String?
    /// The realm the request reads.
    public let realm: Realm
    /// The order of the results.
    public let sortDescriptors: [SortDescriptor<T>]
    /// The order as property names (the seed's `sortKeyPaths`), ascending, if given so.
    public let sortKeyPaths: [String]

    /// A request for the objects of `T` in `realm` that match `predicate`, sorted.
    public init(predicate: Predicate<T>?, realm: Realm, sortDescriptors: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        predicateFormat = nil
        self.realm = realm
        self.sortDescriptors = sortDescriptors
        sortKeyPaths = []
    }

    /// A request with a string query and property names to sort by, ascending (the
    /// RealmResultsController seed's form):
    ///
    /// ```swift
    /// let request = RealmRequest<TaskModel>(predicate: "id != 0", realm: realm, sortKeyPaths: ["projectID", "name"])
    /// ```
    ///
    /// The query is checked when a controller is made from the request (which throws
    /// ``RealmError/invalidQuery(query:offset:reason:)``) or by ``results()``. `LIMIT(n)`
    /// applies to ``results()``; a controller shows every match and refuses it.
    public init(predicate: String, realm: Realm, sortKeyPaths: [String] = []) {
        self.predicate = nil
        predicateFormat = predicate
        self.realm = realm
        sortDescriptors = []
        self.sortKeyPaths = sortKeyPaths
    }

    /// The matching objects, as live results. A string query that cannot be read traps
    /// (see ``results()``, which throws).
    public func execute() -> Results<T> {
        do {
            return try results()
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The matching objects, as live results.
    ///
    /// - Throws: ``RealmError/invalidQuery(query:offset:reason:)`` for a string query or
    ///   sort key path that does not fit `T`.
    public func results() throws -> Results<T> {
        var results = realm.objects(T.self)
        if let predicate { results = results.filter(predicate) }
        if let predicateFormat { results = try results.filter(query: predicateFormat) }
        if !sortKeyPaths.isEmpty { return try results.sorted(byKeyPaths: sortKeyPaths.map { ($0, true) }) }
        return sortDescriptors.isEmpty ? results : results.sorted(by: sortDescriptors)
    }
}

extension Realm {
    /// The objects `request` asks for (``RealmRequest/execute()``).
    public func execute<T: Object>(_ request: RealmRequest<T>) -> Results<T> {
        request.execute()
    }
}
