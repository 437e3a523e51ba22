// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "StrataStorage", targets: ["StrataStorage"]),
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataJSON", targets: ["StrataJSON"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // `swift package generate-documentation` for the DocC catalogs (a plugin only).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // The engine's warnings (recovery, slow syncs, compaction) go to a swift-log Logger.
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
    ],
    targets: [
        // liblz4 from the system (Debian: liblz4-dev).
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // OpenSSL's libcrypto from the system (Debian: libssl-dev): AES-256-GCM and HKDF for
        // encryption at rest (StoreOptions.encryptionKey).
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // Small C helpers the engine needs at full speed: hardware CRC32C.
        .target(name: "CStrataSupport"),
        .target(
            name: "StrataStorage",
            dependencies: [
                "CLZ4",
                "COpenSSL",
                "CStrataSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The JSON reader, writer and value: no dependency on the database (Strata re-exports it).
        .target(name: "StrataJSON"),
        .target(name: "Strata", dependencies: ["StrataStorage", "StrataJSON", "CStrataSupport", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "strata",
            dependencies: [
                "Strata",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/strata"
        ),
        // A child process for the SIGKILL crash test: commits and reports each acknowledged sequence.
        .executableTarget(
            name: "strata-crash-helper",
            dependencies: ["StrataStorage"],
            path: "Tests/CrashHelper"
        ),
        // The child process of the realm SIGKILL test: performs realm writes and reports each one.
        .executableTarget(
            name: "strata-realm-crash-helper",
            dependencies: ["Strata"],
            path: "Tests/RealmCrashHelper"
        ),
        // What the test targets share: the seeded generator, STRATA_SEED and STRATA_FUZZ_SCALE,
        // temporary directories, child processes. Foundation only, so any test target may use it.
        .target(name: "StrataTestSupport", path: "Tests/StrataTestSupport"),
        .testTarget(
            name: "StrataStorageTests",
            dependencies: ["StrataStorage", "strata-crash-helper", "StrataTestSupport"]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "strata-realm-crash-helper", "StrataTestSupport"],
            // JSON fixtures (the JSONTestSuite "minefield"), read by path.
            exclude: ["Fixtures"]
        ),
        // docs/API.md's contract as a user writes it: `import Strata` only.
        .testTarget(
            name: "APIContractTests",
            dependencies: ["Strata"]
        ),
        // docs/API.md §3 the same way (its own target: §3 reuses §2's model names).
        .testTarget(
            name: "JSONContractTests",
            dependencies: ["Strata"]
        ),
        // The `strata` tool, run as a user runs it: as a process, on real stores.
        .testTarget(
            name: "StrataToolTests",
            dependencies: ["Strata", "StrataStorage", "strata", "StrataTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
