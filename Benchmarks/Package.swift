// swift-tools-version:6.0
// The benchmark suite: its own package, so GRDB never reaches Strata's users.
// Run from the repository root with `make bench`.
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    ],
    targets: [
        .target(name: "CBenchSupport", path: "Sources/CBenchSupport"),
        // Shared by both executables: the deterministic generator, the median, and the
        // checked SQLite durability every GRDB baseline runs at.
        .target(name: "BenchSupport", dependencies: [.product(name: "GRDB", package: "GRDB.swift")], path: "Sources/BenchSupport"),
        // The engine's peers, from Debian's -dev packages (`make bench` installs them).
        .systemLibrary(name: "CLMDB", path: "Sources/CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CRocksDB", path: "Sources/CRocksDB", pkgConfig: "rocksdb", providers: [.apt(["librocksdb-dev"])]),
        .systemLibrary(name: "CLevelDB", path: "Sources/CLevelDB", providers: [.apt(["libleveldb-dev"])]),
        // simdjson's DOM parse, the ceiling of the JSON reading suite, behind a C header (simdjson
        // is C++; Debian's libsimdjson-dev). SIMDJSON_THREADS_ENABLED as in its simdjson.pc, so
        // the parser's layout matches the library's build.
        .target(
            name: "CSimdjsonShim",
            path: "Sources/CSimdjsonShim",
            cxxSettings: [.define("SIMDJSON_THREADS_ENABLED", to: "1")],
            linkerSettings: [.linkedLibrary("simdjson")]
        ),
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "BenchSupport", "CBenchSupport", "CLMDB", "CRocksDB", "CLevelDB", "CSimdjsonShim",
                .product(name: "StrataStorage", package: "Strata"),
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/StrataBench"
        ),
        // A real HTTP service (Hummingbird) with a Strata or a GRDB cache behind it, and the
        // loopback load driver that measures both: `make bench-service`.
        .executableTarget(
            name: "strata-service-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/StrataServiceBench"
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17  // simdjson's headers need C++17
)
