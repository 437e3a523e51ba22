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
    /// The realm the request reads.
    public let realm: Realm
    /// The order of the results.
    public let sortDescriptors: [SortDescriptor<T>]

    /// A request for the objects of `T` in `realm` that match `predicate`, sorted.
    public init(predicate: Predicate<T>?, realm: Realm, sortDescriptors: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.realm = realm
        self.sortDescriptors = sortDescriptors
    }

    /// The matching objects, as live results.
    public func execute() -> Results<T> {
        var results = realm.objects(T.self)
        if let predicate { results = results.filter(predicate) }
        return sortDescriptors.isEmpty ? results : results.sorted(by: sortDescriptors)
    }
}

extension Realm {
    /// The objects `request` asks for (``RealmRequest/execute()``).
    public func execute<T: Object>(_ request: RealmRequest<T>) -> Results<T> {
        request.execute()
    }
}
