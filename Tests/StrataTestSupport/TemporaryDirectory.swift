// The one way the test targets make a scratch directory: a unique name under the system's
// temporary directory, removed with its contents when the object goes away.

import Foundation

/// A uniquely named directory under `NSTemporaryDirectory()`, removed with everything in it on
/// deinit.
public final class TemporaryDirectory: Sendable {
    /// Its absolute path.
    public let path: String

    /// Its path as a file URL.
    public var url: URL { URL(fileURLWithPath: path) }

    /// A fresh `<label>-<8 hex digits>` path; the directory is made unless `create` is false
    /// (for a test where the code under test makes it).
    public init(_ label: String = "strata", create: Bool = true) {
        path = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString.prefix(8))"
        if create { try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    }

    /// The path of subdirectory `name`, made if missing.
    public func sub(_ name: String) -> String {
        let p = path + "/" + name
        try? FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        return p
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
