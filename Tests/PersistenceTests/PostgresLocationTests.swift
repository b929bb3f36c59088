import PostgresStore
import Testing

/// `--store` URLs: what is accepted, what is refused and why, and that a password never shows.
struct PostgresLocationTests {
    @Test(arguments: [
        ("postgres://canopy:secret@db.internal:5432/canopy", "postgres://canopy:***@db.internal:5432/canopy"),
        (
            "postgresql://canopy@localhost/canopy?sslmode=disable",
            "postgresql://canopy@localhost/canopy?sslmode=disable"
        ),
        ("postgres://canopy@localhost/canopy?sslmode=require", "postgres://canopy@localhost/canopy?sslmode=require"),
        ("postgres://canopy@/canopy?host=/run/postgresql", "postgres://canopy@/canopy?host=/run/postgresql"),
    ])
    func acceptedURLsAreShownWithoutTheirPassword(url: String, shown: String) throws {
        #expect(try PostgresLocation(url).description == shown)
    }

    @Test(arguments: [
        ("mysql://canopy:secret@db/canopy", "expected postgres://USER@HOST:PORT/DATABASE"),
        ("postgres://canopy:secret@db:port/canopy", "expected postgres://USER@HOST:PORT/DATABASE"),
        ("postgres://db.internal/canopy", "it names no user"),
        ("postgres://canopy@/canopy", "it names no host (or ?host=/socket/directory)"),
        (
            "postgres://canopy:secret@db/canopy?sslmode=verify-full",
            "sslmode \"verify-full\" is not disable, prefer or require"
        ),
    ])
    func refusedURLsSayWhy(url: String, reason: String) {
        #expect {
            try PostgresLocation(url)
        } throws: { error in
            guard case .invalidURL(let shown, let why)? = error as? PostgresStoreError else { return false }
            return why == reason && !shown.contains("secret")
        }
    }
}
