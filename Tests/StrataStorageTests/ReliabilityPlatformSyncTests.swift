// Reliability #22: the data-sync primitive behind `.full` durability is chosen per platform
// — `fdatasync` on Linux, `fcntl(F_FULLFSYNC)` (falling back to `fsync`) on Darwin — and a
// failure of it is reported as a sync failure. Only the Linux side can run here; the
// Darwin branch is compiled only on Darwin (docs/ARCHITECTURE.md, "Platforms").

import XCTest
import StrataTestSupport
@testable import StrataStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class ReliabilityPlatformSyncTests: XCTestCase {
    func testDataSyncPrimitiveIsThePlatformsDurableOne() {
        #if canImport(Darwin)
        XCTAssertEqual(dataSyncPrimitive, .fullFsync, "plain fsync on Darwin leaves the data in the drive's cache")
        XCTAssertEqual(dataSyncOperationName, "fcntl F_FULLFSYNC")
        #else
        XCTAssertEqual(dataSyncPrimitive, .fdatasync)
        XCTAssertEqual(dataSyncOperationName, "fdatasync")
        #endif
    }

    func testRealFileSyncsAndAFailedSyncIsASyncFailure() throws {
        let directory = TemporaryDirectory("platform-sync", create: false)
        let fs = PosixFileSystem()
        try fs.createDirectory(directory.path)
        let file = try fs.openFile(directory.path + "/data", create: true, readOnly: false)
        let bytes: [UInt8] = Array(repeating: 7, count: 4096)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        XCTAssertNoThrow(try file.sync())
        XCTAssertNoThrow(try fs.syncDirectory(directory.path))
        file.close()
        // A descriptor that is not open: the primitive fails and the error names it.
        XCTAssertEqual(syncFileData(-1), -1)
        XCTAssertEqual(errno, EBADF)
        let closed = PosixFile(fd: -1, path: directory.path + "/closed")
        XCTAssertThrowsError(try closed.sync()) { error in
            guard let error = error as? StoreError, case .io(let op, _, let code) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(op, dataSyncOperationName)
            XCTAssertEqual(code, EBADF)
            XCTAssertTrue(error.isSyncFailure, "a failed data sync takes the store out of service")
        }
    }
}
