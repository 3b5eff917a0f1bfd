// swift-tools-version:6.0
// AttestEdge: a self-hosted Apple App Attest backend. Only the toolchain and Debian's C
// libraries (OpenSSL, LMDB, libcurl) are used; SwiftPM fetches nothing.
// Every target lists each module it imports, even one a dependency already brings: SwiftPM
// rebuilds a target only when a declared dependency changes, so a module imported without
// being declared can stay compiled against an old layout of its types (PackageManifestTests).
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "AttestEdge",
    products: [
        .library(name: "AttestCore", targets: ["AttestCore"]),
        .library(name: "AttestTesting", targets: ["AttestTesting"]),
        .executable(name: "attestctl", targets: ["attestctl"]),
        .executable(name: "attest-challenge", targets: ["attest-challenge"]),
        .executable(name: "attest-validate", targets: ["attest-validate"]),
        .executable(name: "attest-refresh", targets: ["attest-refresh"]),
        .executable(name: "attest-mad", targets: ["attest-mad"]),
        .executable(name: "attest-monitor", targets: ["attest-monitor"]),
        .executable(name: "attest-webhooks", targets: ["attest-webhooks"]),
        .executable(name: "attest-flags", targets: ["attest-flags"]),
        .executable(name: "attest-feedback", targets: ["attest-feedback"]),
        .executable(name: "attest-org", targets: ["attest-org"]),
        .executable(name: "attest-receipts", targets: ["attest-receipts"]),
        .executable(name: "attest-device", targets: ["attest-device"]),
        .executable(name: "attest-fcgi-bench", targets: ["attest-fcgi-bench"]),
        .executable(name: "attest-bench", targets: ["attest-bench"]),
        .executable(name: "attest-fuzz", targets: ["attest-fuzz"]),
    ],
    targets: [
        // C libraries, wrapped once each (module.modulemap + shim.h).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CFastCGI"),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Relaxed atomic adds on shared memory (header-only: nothing is linked).
        .systemLibrary(name: "CMetrics"),

        // Libraries.
        .target(name: "AttestCore", dependencies: ["COpenSSL"], swiftSettings: strict),
        .target(name: "AttestStore", dependencies: ["CLMDB", "CPostgres", "AttestCore"], swiftSettings: strict),
        .target(name: "FastCGI", dependencies: ["CFastCGI"], swiftSettings: strict),
        // Prometheus metrics from pre-forked processes: per-pool counters in shared memory
        // (`MetricsSegment`) and their text exposition.
        .target(name: "AttestMetrics", dependencies: ["CMetrics"], swiftSettings: strict),
        // What a deployment is: its configuration and its data directory (config.json, secrets,
        // signing keys, trust roots), read by serving and written by operations.
        .target(name: "AttestConfig", dependencies: ["AttestCore", "AttestStore"], swiftSettings: strict),
        // Serving: the endpoints, tokens, admission, usage counting (the pools).
        .target(name: "AttestService", dependencies: [
            "AttestConfig", "AttestCore", "AttestMetrics", "AttestStore", "FastCGI", "CLISupport",
        ], swiftSettings: strict),
        // Operations: making a data directory, key rotation, backup and restore, webhook delivery,
        // redeeming receipts with Apple, root acting on the service user's data directory.
        .target(name: "AttestOperations", dependencies: [
            "AttestConfig", "AttestCore", "AttestService", "AttestStore", "CLISupport", "FastCGI", "HTTPClient",
        ], swiftSettings: strict),
        // The process supervisor of `attestctl serve`: nginx, the pools and the sender as children.
        .target(name: "AttestSupervisor", dependencies: [
            "AttestConfig", "AttestCore", "AttestOperations", "AttestService", "CFastCGI", "CLISupport", "HTTPClient",
        ], swiftSettings: strict),
        .target(name: "AttestTesting", dependencies: ["AttestCore", "COpenSSL"], swiftSettings: strict),
        .target(name: "CLISupport", swiftSettings: strict),
        .target(name: "HTTPClient", dependencies: ["CCurl"], swiftSettings: strict),
        // `attestctl status`: Prometheus's text format, the status from two scrapes, its screen and JSON.
        .target(name: "AttestStatus", dependencies: ["AttestConfig", "AttestCore", "CLISupport"],
                swiftSettings: strict),
        // Fuzz targets (one file each) and the seed corpus builder; nginx/scripts/fuzz.sh builds
        // attest-fuzz with -sanitize=fuzzer, plain builds replay inputs (Tests/FuzzCorpus).
        .target(name: "AttestFuzz", dependencies: [
            "AttestConfig", "AttestCore", "AttestOperations", "AttestStore", "AttestService", "AttestTesting",
            "FastCGI",
        ], swiftSettings: strict),

        // Executables: thin main.swift files.
        // attestctl links the test PKI for `init --test-ca` and `serve --test-ca` (TestCA) only.
        .executableTarget(name: "attestctl", dependencies: [
            "CLISupport", "AttestConfig", "AttestCore", "AttestOperations", "AttestService", "AttestStore",
            "AttestSupervisor", "AttestTesting", "AttestStatus", "HTTPClient",
        ], swiftSettings: strict),
        .executableTarget(name: "attest-challenge", dependencies: ["AttestService", "FastCGI"], swiftSettings: strict),
        .executableTarget(name: "attest-validate", dependencies: ["AttestService", "FastCGI"], swiftSettings: strict),
        .executableTarget(name: "attest-refresh", dependencies: ["AttestService", "FastCGI"], swiftSettings: strict),
        .executableTarget(name: "attest-mad", dependencies: ["AttestService", "FastCGI"], swiftSettings: strict),
        .executableTarget(name: "attest-monitor", dependencies: ["AttestService", "FastCGI"], swiftSettings: strict),
        .executableTarget(name: "attest-flags", dependencies: ["AttestService"], swiftSettings: strict),
        .executableTarget(name: "attest-feedback", dependencies: ["AttestService"], swiftSettings: strict),
        .executableTarget(name: "attest-org", dependencies: ["AttestService"], swiftSettings: strict),
        .executableTarget(name: "attest-webhooks", dependencies: [
            "AttestConfig", "AttestOperations", "AttestService", "AttestStore", "AttestCore", "CLISupport",
            "FastCGI", "HTTPClient",
        ], swiftSettings: strict),
        // Redeems receipts with Apple (ReceiptRedeemer): the second process that connects out.
        .executableTarget(name: "attest-receipts", dependencies: [
            "AttestConfig", "AttestOperations", "AttestService", "AttestStore", "AttestCore", "CLISupport", "FastCGI",
        ], swiftSettings: strict),
        .executableTarget(name: "attest-device", dependencies: ["CLISupport", "HTTPClient", "AttestCore", "AttestTesting"], swiftSettings: strict),
        .executableTarget(name: "attest-fcgi-bench", dependencies: ["FastCGI", "AttestCore"], swiftSettings: strict),
        // The in-process benchmarks (software devices from the test PKI); never installed.
        .executableTarget(name: "attest-bench", dependencies: [
            "AttestConfig", "AttestCore", "AttestMetrics", "AttestOperations", "AttestService", "AttestStore",
            "AttestTesting", "CLISupport", "FastCGI",
        ], swiftSettings: strict),
        .executableTarget(name: "attest-fuzz", dependencies: ["AttestFuzz"], swiftSettings: strict),

        // Tests.
        .testTarget(name: "AttestCoreTests", dependencies: ["AttestCore", "AttestTesting"], exclude: ["Vectors"], swiftSettings: strict),
        .testTarget(name: "AttestStoreTests", dependencies: ["AttestStore", "AttestCore", "CLMDB"], swiftSettings: strict),
        .testTarget(name: "FastCGITests", dependencies: ["FastCGI"], swiftSettings: strict),
        .testTarget(name: "AttestMetricsTests", dependencies: ["AttestMetrics"], swiftSettings: strict),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient"], swiftSettings: strict),
        .testTarget(name: "AttestStatusTests", dependencies: [
            "AttestStatus", "AttestConfig", "AttestCore", "CLISupport",
        ], swiftSettings: strict),
        .testTarget(name: "AttestFuzzTests", dependencies: ["AttestFuzz"], swiftSettings: strict),
        .testTarget(name: "AttestConfigTests", dependencies: ["AttestConfig", "AttestCore", "AttestStore"],
                    swiftSettings: strict),
        .testTarget(name: "AttestServiceTests", dependencies: [
            "AttestConfig", "AttestMetrics", "AttestOperations", "AttestService", "AttestTesting", "AttestStore",
            "AttestCore", "FastCGI",
        ], swiftSettings: strict),
        // What the supervisor's and attestctl's tests share: temporary directories, waiting, the
        // service user's side of the root-boundary tests. A library under Tests/, not a product.
        .target(name: "SupervisorTestSupport", dependencies: ["AttestSupervisor", "AttestConfig"],
                path: "Tests/SupervisorTestSupport", swiftSettings: strict),
        .testTarget(name: "AttestSupervisorTests", dependencies: [
            "AttestSupervisor", "AttestConfig", "CLISupport", "SupervisorTestSupport",
        ], swiftSettings: strict),
        // attestctl's own commands (reload, restore) against a hostile data directory.
        .testTarget(name: "AttestctlTests", dependencies: [
            "attestctl", "AttestConfig", "AttestCore", "AttestStore", "AttestOperations", "AttestSupervisor",
            "SupervisorTestSupport",
        ], swiftSettings: strict),
    ]
)
