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
    ],
    targets: [
        .target(name: "CBenchSupport", path: "Sources/CBenchSupport"),
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "CBenchSupport",
                .product(name: "StrataStorage", package: "Strata"),
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/StrataBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
