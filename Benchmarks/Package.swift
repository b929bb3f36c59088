// swift-tools-version: 6.1
import PackageDescription

// A package of its own, so that package-benchmark and its dependencies never reach the dependency
// graph of Canopy's library users. Run from the repository root with
// `swift package --package-path Benchmarks benchmark`.

/// The same language rules as every Canopy target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "CanopyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "canopy", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // package-benchmark's own allocation counter, read directly to divide a storm's allocations
        // by its clients.
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.5.0"),
    ],
    targets: [
        // package-benchmark finds its targets by their folder's parent being named `Benchmarks`,
        // which this package's own folder is.
        .executableTarget(
            name: "QueryResolution",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Tree", package: "canopy"),
                .product(name: "Query", package: "canopy"),
                .product(name: "ServerStorage", package: "canopy"),
            ],
            path: "QueryResolution",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "StoreCommit",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Tree", package: "canopy"),
                .product(name: "ServerStorage", package: "canopy"),
            ],
            path: "StoreCommit",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CacheEviction",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Tree", package: "canopy"),
                .product(name: "ClientCache", package: "canopy"),
                .product(name: "Canopy", package: "canopy"),
                .product(name: "CanopyServer", package: "canopy"),
                .product(name: "CanopyTesting", package: "canopy"),
            ],
            path: "CacheEviction",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RulesEvaluation",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Rules", package: "canopy"),
                .product(name: "Tree", package: "canopy"),
            ],
            path: "RulesEvaluation",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ReconnectionFanout",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CanopyServer", package: "canopy"),
                .product(name: "CanopyTesting", package: "canopy"),
                .product(name: "Transport", package: "canopy"),
                .product(name: "RealtimeClientSocket", package: "canopy"),
                .product(name: "Tree", package: "canopy"),
                .product(name: "ProcessResources", package: "canopy"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "ReconnectionFanout",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
