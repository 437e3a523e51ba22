// Issue 13, finding 11: dropping a `Store` without `close()` must never hang. `deinit` closes
// the store, and closing waits for background compactions; a compaction thread that was
// started by the last commit but had not yet taken its (weak) reference to the store finds
// it gone and never reports that it finished — so `deinit` waited for it forever.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ReliabilityDeinitTests: XCTestCase {
    /// Runs `body` on its own thread; false if it has not returned within `seconds`.
    private func finishes(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done.wait(timeout: .now() + seconds) == .success
    }

    func testDroppingAStoreRightAfterACommitThatStartsACompactionNeverHangs() throws {
        let base = TemporaryDirectory("deinit")
        var policy = CompactionPolicy()
        policy.minimumDeadBytes = 0
        policy.triggerDeadFraction = 0.01
        var opts = options(segmentSize: 4096, durability: .none)
        opts.autoCompaction = .custom(policy)
        let storeOptions = opts
        let rounds = 60 * TestEnvironment.fuzzScale
        for round in 0 ..< rounds {
            let path = base.sub("r\(round)")
            // Overwrites across sealed segments, written without compaction: dead bytes waiting.
            var quiet = opts
            quiet.autoCompaction = .disabled
            let setup = try Store(path: path, options: quiet)
            for i in 0 ..< 11 { try setup.write { try $0.put(table: 1, key: key(i % 3), value: value(UInt64(i), length: 1500)) } }
            try setup.close()
            let finished = finishes(within: 10) {
                do {
                    let store = try Store(path: path, options: storeOptions)
                    // This commit starts a background compaction thread...
                    try store.write { try $0.put(table: 1, key: key(11 % 3), value: value(11, length: 1500)) }
                    // ...and the last reference goes here, without close(), while that thread starts.
                } catch {
                    XCTFail("round \(round): \(error)")
                }
            }
            guard finished else {
                XCTFail("round \(round): dropping the store without close() hung in deinit")
                return
            }
            // Whichever thread let go last (this one, or a compaction thread that held the
            // store meanwhile) ran deinit, which closed the store: it reopens with everything.
            var reopenedStore: Store?
            let deadline = Date().addingTimeInterval(20)
            while reopenedStore == nil && Date() < deadline {
                do {
                    reopenedStore = try Store(path: path, options: opts)
                } catch StoreError.locked {
                    usleep(5_000)
                }
            }
            guard let reopened = reopenedStore else {
                XCTFail("round \(round): the dropped store never released its lock: deinit hung")
                return
            }
            for i in 9 ..< 12 { XCTAssertEqual(try reopened.get(table: 1, key: key(i % 3)), value(UInt64(i), length: 1500), "round \(round)") }
            try reopened.close()
        }
    }
}
