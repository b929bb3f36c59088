// swift-tools-version: 6.1
import PackageDescription

/// Language rules every Canopy target is held to.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "canopy",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Tree", targets: ["Tree"]),
        .library(name: "Query", targets: ["Query"]),
        .library(name: "SyncEngine", targets: ["SyncEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        .target(
            name: "Tree",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Modules/Tree",
            swiftSettings: swiftSettings
        ),
        .target(name: "Query", dependencies: ["Tree"], path: "Modules/Query", swiftSettings: swiftSettings),
        .target(
            name: "SyncEngine",
            dependencies: ["Tree", "Query"],
            path: "Modules/SyncEngine",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TreeTests",
            dependencies: ["Tree", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "QueryTests",
            dependencies: ["Tree", "Query", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: ["Tree", "Query", "SyncEngine"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
    ]
)
