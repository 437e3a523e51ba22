// swift-tools-version:6.0
// Strata Studio: a local web page over a store (`make studio`). Its own package, so the web
// server (Hummingbird) never reaches Strata's library users.
import PackageDescription

let package = Package(
    name: "StrataStudio",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "strata-studio", targets: ["strata-studio"]),
    ],
    dependencies: [
        .package(name: "Strata", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    ],
    targets: [
        // The server: routes, pages and the store access, testable without a process.
        .target(
            name: "StudioCore",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "strata-studio",
            dependencies: ["StudioCore", .product(name: "Strata", package: "Strata")]
        ),
        .testTarget(
            name: "StudioTests",
            dependencies: [
                "StudioCore",
                "strata-studio",
                .product(name: "Strata", package: "Strata"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
