# Strata: `make demo` and `make test` do everything on a fresh machine.
SWIFT ?= swift
SHELL := /bin/bash

.PHONY: demo test build deps bench-deps bench bench-service service-check tsan docs

# liblz4's and libcrypto's headers and pkg-config files come from Debian's liblz4-dev and
# libssl-dev (OpenSSL 3: AES-256-GCM and HKDF for encryption at rest).
deps:
	@if ! pkg-config --exists liblz4 libcrypto 2>/dev/null; then \
		echo "Installing liblz4-dev and libssl-dev (needed by the CLZ4 and COpenSSL targets)..."; \
		SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq liblz4-dev libssl-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) build --product strata
	$$($(SWIFT) build --show-bin-path)/strata demo

# The suite is XCTest; its summary becomes the last line, as "N passed, N failed".
test: deps
	$(SWIFT) build --build-tests
	@mkdir -p .build
	@set -o pipefail; $(SWIFT) test --skip-build --disable-swift-testing 2>&1 | tee .build/test-output.log; status=$$?; \
	awk '/Executed [0-9]+ tests?, with [0-9]+ failures?/ { n = $$2; f = $$5 } END { if (n != "") printf "%d passed, %d failed\n", n - f, f }' .build/test-output.log; \
	exit $$status

# The concurrency tests under ThreadSanitizer (own build folder, so it does not evict the debug build).
tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --disable-swift-testing --filter 'StrataStorageTests.ConcurrencyTests|StrataStorageTests.EncryptionTests/testConcurrentReadersAndAWriterOnAnEncryptedStore|StrataStorageTests.AsyncWriteTests|StrataTests.ConcurrencyTests|StrataTests.FailedSyncTests|StrataStorageTests.CompactionTests/testReadersWriters|StrataTests.HandoffAndCopyTests|StrataTests.NotificationTests|StrataTests.WriteSemanticsTests/testConcurrentDurableWritersNeverLoseAnUpdate|StrataTests.ResultsControllerTests/testWritesFromOtherThreadsReachAQueueConfinedController|StrataTests.WriteGateTests|StrataStorageTests.SealedHintTests|StrataStorageTests.IndexImageTests/testReadersAndAWriter|StrataStorageTests.IndexImageTests/testRollsWriteImages|StrataStorageTests.FollowerTests/testAFollowerRefreshesAlongAWriterInAnotherProcess|StrataStorageTests.WritingInTurnsTests|StrataTests.RealmKillTests/testTwoProcessesWriteOneRealmInTurns|StrataTests.RealmKillTests/testAReadOnlyRealmAdvancesAndNotifiesBesideAWriterInAnotherProcess|APIContractTests.PortingInstanceCacheContractTests|APIContractTests.PortingRealmAPIContractTests|APIContractTests.PortingCollectionContractTests|APIContractTests.PortingMainThreadAutorefreshContractTests'

# The benchmark suite (its own package; builds GRDB in release mode).
# The engine's peers (LMDB, RocksDB, LevelDB) come from Debian's -dev packages.
bench-deps: deps
	@if ! pkg-config --exists lmdb rocksdb simdjson 2>/dev/null || [ ! -f /usr/include/leveldb/c.h ]; then \
		echo "Installing liblmdb-dev, librocksdb-dev, libleveldb-dev and libsimdjson-dev (the benchmark's peers)..."; \
		SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq liblmdb-dev librocksdb-dev libleveldb-dev libsimdjson-dev; \
	fi

bench: bench-deps
	cd Benchmarks && $(SWIFT) run -c release strata-bench

# A real HTTP service (Hummingbird 2) over Strata and over GRDB, loaded from 127.0.0.1 at 1, 16
# and 64 connections (90% reads, 10% durable partial writes), every acknowledged write checked
# in the reopened store; a table with the ratios Strata/GRDB (docs/server.md).
# Options after ARGS=, e.g. `make bench-service ARGS="--requests 50000 --connections 16"`.
bench-service: deps
	cd Benchmarks && $(SWIFT) run -c release strata-service-bench $(ARGS)

# The same service as a check (run by CI): a short debug-build run on 127.0.0.1 at 1 and 16
# connections, bounded to 2,000 requests or 20 s a run; exits non-zero on any request error
# or any acknowledged write missing from the reopened store.
service-check: bench-deps
	cd Benchmarks && $(SWIFT) build --product strata-service-bench
	cd Benchmarks && $$($(SWIFT) build --show-bin-path)/strata-service-bench --rounds 1 --requests 2000 --seconds 20 --connections 1,16 --events-seconds 0.5

# DocC archives for the three libraries (swift-docc-plugin); fails on any documentation warning.
docs: deps
	$(SWIFT) package --disable-sandbox generate-documentation --target StrataStorage --target StrataJSON --target Strata --warnings-as-errors --disable-indexing


# Strata Studio (docs/studio.md): its own package under Tools/studio, so Hummingbird never
# reaches the library's users. `make studio` builds strata-studio (`strata studio` runs it).
# Flags for swift build after STUDIO_FLAGS=, e.g. `make studio-check STUDIO_FLAGS="-j 1"`.
.PHONY: studio studio-check
STUDIO_FLAGS ?=
studio: deps
	cd Tools/studio && $(SWIFT) build $(STUDIO_FLAGS) --product strata-studio

# Builds the studio, runs its HTTP tests (every endpoint and bad input, on 127.0.0.1), then a
# headless Chromium (Debian's chromium, installed if missing) on the demo store: a query page
# renders rows, following a link shows the linked object, a bad query shows its error;
# screenshots in docs/studio.png and docs/studio-stats.png. The server is bounded (--seconds)
# and killed after the check.
studio-check: deps
	cd Tools/studio && $(SWIFT) build $(STUDIO_FLAGS) --build-tests
	cd Tools/studio && $(SWIFT) test --skip-build --disable-swift-testing
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "Installing chromium (the studio's browser test)..."; \
		SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	fi
	$(SWIFT) build $(STUDIO_FLAGS) --product strata
	Tools/studio/Scripts/browser-check.sh "$$($(SWIFT) build --show-bin-path)/strata" "$$(cd Tools/studio && $(SWIFT) build --show-bin-path)/strata-studio" docs
