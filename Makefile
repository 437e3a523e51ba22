# Strata: `make demo` and `make test` do everything on a fresh machine.
SWIFT ?= swift

.PHONY: demo test build deps bench tsan

# liblz4's headers and pkg-config file come from Debian's liblz4-dev.
deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "Installing liblz4-dev (needed by the CLZ4 target)..."; \
		SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq liblz4-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) build --product strata
	$$($(SWIFT) build --show-bin-path)/strata demo

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The concurrency tests under ThreadSanitizer (own build folder, so it does not evict the debug build).
tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'StrataStorageTests.ConcurrencyTests'

# The benchmark suite (its own package; builds GRDB in release mode).
bench: deps
	cd Benchmarks && $(SWIFT) run -c release strata-bench
