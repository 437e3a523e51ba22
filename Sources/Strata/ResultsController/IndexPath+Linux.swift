// UIKit's IndexPath conveniences, for platforms without UIKit or AppKit (Linux).

import Foundation

#if !canImport(UIKit) && !canImport(AppKit)
extension IndexPath {
    /// An index path to `item` in `section`.
    public init(item: Int, section: Int) { self.init(indexes: [section, item]) }
    /// An index path to `row` in `section`.
    public init(row: Int, section: Int) { self.init(indexes: [section, row]) }
    /// The section (the first index).
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }
    /// The item within the section (the second index).
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
    /// The row within the section (the second index).
    public var row: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
}
#endif
