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
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2), .macCatalyst(.v18)],
    products: [
        .library(name: "Tree", targets: ["Tree"]),
        .library(name: "Query", targets: ["Query"]),
        .library(name: "Rules", targets: ["Rules"]),
        .library(name: "SyncEngine", targets: ["SyncEngine"]),
        .library(name: "Canopy", targets: ["Canopy"]),
        .library(name: "Persistence", targets: ["Persistence"]),
        .library(name: "ServerStorage", targets: ["ServerStorage"]),
        .library(name: "ClientCache", targets: ["ClientCache"]),
        .library(name: "PostgresStore", targets: ["PostgresStore"]),
        .library(name: "Transport", targets: ["Transport"]),
        .library(name: "RealtimeClientSocket", targets: ["RealtimeClientSocket"]),
        .library(name: "Presence", targets: ["Presence"]),
        .library(name: "Auth", targets: ["Auth"]),
        .library(name: "CanopyServer", targets: ["CanopyServer"]),
        .library(name: "CanopyTesting", targets: ["CanopyTesting"]),
        .library(name: "ProcessResources", targets: ["ProcessResources"]),
        .executable(name: "canopy-server", targets: ["canopy-server"]),
        .executable(name: "canopy-load", targets: ["canopy-load"]),
        .executable(name: "canopy", targets: ["CanopyCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "Tree",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Modules/Tree",
            swiftSettings: swiftSettings
        ),
        .target(name: "Query", dependencies: ["Tree"], path: "Modules/Query", swiftSettings: swiftSettings),
        .target(name: "Rules", dependencies: ["Tree"], path: "Modules/Rules", swiftSettings: swiftSettings),
        .target(
            name: "SyncEngine",
            dependencies: ["Tree", "Query"],
            path: "Modules/SyncEngine",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Canopy",
            dependencies: [
                "Tree", "Query", "SyncEngine", "Transport", "RealtimeClientSocket", "ClientCache",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Modules/Canopy",
            swiftSettings: swiftSettings
        ),
        .target(name: "Persistence", path: "Modules/Persistence", swiftSettings: swiftSettings),
        .target(
            name: "ServerStorage",
            dependencies: [
                "Tree", "Persistence",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Modules/ServerStorage",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ClientCache",
            dependencies: [
                "Tree", "Persistence",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Modules/ClientCache",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PostgresStore",
            dependencies: [
                "Tree", "Persistence", "ServerStorage",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Modules/PostgresStore",
            swiftSettings: swiftSettings
        ),
        .target(name: "Transport", dependencies: ["Tree"], path: "Modules/Transport", swiftSettings: swiftSettings),
        .target(
            name: "RealtimeClientSocket",
            dependencies: [
                "Tree", "Transport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Modules/RealtimeClientSocket",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Presence",
            dependencies: ["Tree"],
            path: "Modules/Presence",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Auth",
            dependencies: [
                "Tree",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Modules/Auth",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CanopyServer",
            dependencies: [
                "Tree", "Query", "Persistence", "ServerStorage", "PostgresStore", "Transport", "Presence", "Auth",
                "Rules",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Modules/CanopyServer",
            resources: [.copy("Console")],
            swiftSettings: swiftSettings
        ),
        .target(name: "ProcessResources", path: "Modules/ProcessResources", swiftSettings: swiftSettings),
        .target(
            name: "CanopyTesting",
            dependencies: [
                "CanopyServer", "Auth", "Transport", "RealtimeClientSocket", "Tree",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Modules/CanopyTesting",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "canopy-write-probe",
            dependencies: ["Canopy"],
            path: "Tools/canopy-write-probe",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "canopy-server",
            dependencies: [
                "CanopyServer", "Auth", "ProcessResources",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/canopy-server",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "canopy-load",
            dependencies: [
                "Canopy", "Transport", "RealtimeClientSocket", "Tree", "PostgresStore", "ProcessResources",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Apps/canopy-load",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "CanopyCLI",
            dependencies: [
                "Canopy", "Query", "Tree", "Transport", "RealtimeClientSocket",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Apps/canopy",
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
            name: "RulesTests",
            dependencies: ["Tree", "Rules"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PersistenceTests",
            dependencies: [
                "Tree", "Persistence", "ServerStorage", "ClientCache", "PostgresStore", "CanopyTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "ProcessResourcesTests", dependencies: ["ProcessResources"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PresenceTests",
            dependencies: ["Tree", "Presence"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AuthTests",
            dependencies: [
                "Auth", "Tree",
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "TransportTests", dependencies: ["Tree", "Transport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "RealtimeClientSocketTests",
            dependencies: [
                "Tree", "Transport", "RealtimeClientSocket", "CanopyTesting", "CanopyServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: ["Tree", "Query", "SyncEngine"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CanopyTests",
            dependencies: [
                "Canopy", "CanopyTesting", "CanopyServer", "Auth", "Persistence", "ClientCache", "Transport",
                "RealtimeClientSocket", "Tree",
                "canopy-write-probe",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // An app's view model using the SDK's callbacks, compiled in each language mode with an app's
        // default settings (not the upcoming features above), so Firebase's documented forms are
        // checked as apps write them.
        .testTarget(
            name: "MainActorSwift6Tests",
            dependencies: ["Canopy", "CanopyTesting"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "MainActorSwift5Tests",
            dependencies: ["Canopy", "CanopyTesting"],
            swiftSettings: [.swiftLanguageMode(.v5), .enableUpcomingFeature("StrictConcurrency")]
        ),
        // The server's types called in-process: its database, listeners, budgets, frames, parsers.
        .testTarget(
            name: "CanopyServerTests",
            dependencies: [
                "CanopyServer", "CanopyTesting", "Persistence", "ServerStorage", "Presence", "Transport", "Tree",
                "Query", "Rules",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Servers started on loopback sockets (in this process or as the built binaries) and
        // talked to as clients.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "CanopyTesting", "CanopyServer", "ServerStorage", "Transport", "RealtimeClientSocket", "Tree", "Query",
                "Auth", "ProcessResources",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "CanopyCLI", "CanopyTesting", "CanopyServer", "Tree", "Canopy", "ProcessResources",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
