/// The tables and functions of the PostgreSQL store, created and upgraded by named migrations run
/// in order at start (``PostgresStorage/prepare()``), each recorded in `canopy_migrations`.
///
/// `v1`:
/// - `canopy_nodes(ns, path, value)`: one row per leaf, per packed object and per priority of each namespace, laid out
///   as SQLite's `nodes` table (see ``Persistence/SQLiteServerStore``). `path` sorts by bytes
///   (`COLLATE "C"`), so a subtree is one range of the primary key: `path >= 'a/' AND path < 'a0'`.
/// - `canopy_settings(ns, name, value)`: small JSON documents such as the security rules.
/// - `canopy_owner(ns, node, host, epoch, lease_until)`: which server process serves each
///   namespace, and where clients reach it. A process takes a namespace by raising its epoch, and
///   every commit first renews the lease of its own epoch under the row's lock, so a process that
///   lost the namespace can never commit.
/// - `canopy_members(node, host, joined_at)`: the processes that ran, with the host each advertises
///   (whether one still runs is told by its node lock, see ``PostgresStorage``).
/// - `canopy_commit(ns, epoch, lease, operations…)`: a batch of ``Persistence/RowOperation``s in one
///   round trip, fenced by the epoch; `canopy_set_setting` the same for a setting.
///
/// `v2`:
/// - `canopy_disconnect(ns, session, operations, created_at)`: the onDisconnect operations of each
///   live connection, stored before they are acknowledged; the process that takes a namespace over
///   runs those of the connections a dead process held.
/// - `canopy_commit` also stores (`disconnect_store`) and removes (`disconnect_remove`) them, in
///   the transaction of the writes they are submitted with: the writes an operation makes and the
///   removal of its row commit together, so each runs exactly once.
///
/// `v3`:
/// - `canopy_write_ids(ns, client, highest, not_applied, seen)`: per namespace, one row per client
///   that named its writes with write ids (``Persistence/StoredWriteIDs``); the process that opens
///   the namespace next (after a restart, or taking it over) reads them, so that a write resent
///   after its owner died is answered as it was, not applied again.
/// - `canopy_commit` also stores (`write_ids_store`, the row as JSON in the second argument) and
///   removes (`write_ids_forget`) them, in the transaction of the writes they record: a run of
///   either is one statement.
///
/// `v4`:
/// - `canopy_commit` deletes the rows below a run of paths in one statement (a range of the primary
///   key per path, joined laterally), instead of one statement per path: each was planned anew,
///   which took half of the function's time on a batch of leaf writes.
enum PostgresSchema {
    struct Migration {
        var name: String
        var statements: [String]
    }

    /// The SQLSTATE `canopy_commit` raises when the epoch it was given no longer owns the namespace.
    static let fencedState = "CN001"

    static let migrations: [Migration] = [
        Migration(
            name: "v1",
            statements: [
                """
                CREATE TABLE canopy_nodes (
                    ns text NOT NULL, path text COLLATE "C" NOT NULL, value text NOT NULL, PRIMARY KEY (ns, path))
                """,
                """
                CREATE TABLE canopy_settings (ns text NOT NULL, name text NOT NULL, value text NOT NULL,
                    PRIMARY KEY (ns, name))
                """,
                """
                CREATE TABLE canopy_owner (ns text PRIMARY KEY, node text NOT NULL, host text,
                    epoch bigint NOT NULL, lease_until timestamptz NOT NULL)
                """,
                """
                CREATE TABLE canopy_members (node text PRIMARY KEY, host text, joined_at timestamptz NOT NULL)
                """,
                """
                CREATE FUNCTION canopy_parent(p text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
                    SELECT CASE WHEN p = '' THEN NULL WHEN strpos(p, '/') = 0 THEN ''
                        ELSE regexp_replace(p, '/[^/]*$', '') END
                $$
                """,
                """
                CREATE FUNCTION canopy_priority_row(p text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
                    SELECT CASE WHEN p = '' THEN '.priority' ELSE p || '/.priority' END
                $$
                """,
                """
                CREATE FUNCTION canopy_has_data(p_ns text, p text) RETURNS boolean LANGUAGE sql STABLE AS $$
                    SELECT CASE WHEN p = '' THEN
                        EXISTS (SELECT 1 FROM canopy_nodes WHERE ns = p_ns AND path <> '.priority')
                    ELSE
                        EXISTS (SELECT 1 FROM canopy_nodes WHERE ns = p_ns AND path = p)
                        OR EXISTS (SELECT 1 FROM canopy_nodes WHERE ns = p_ns AND path >= p || '/' COLLATE "C"
                            AND path < p || '0' COLLATE "C" AND path <> p || '/.priority')
                    END
                $$
                """,
                """
                CREATE FUNCTION canopy_fence(p_ns text, p_epoch bigint, p_lease_ms bigint) RETURNS void
                LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE canopy_owner SET lease_until = now() + p_lease_ms * interval '1 millisecond'
                        WHERE ns = p_ns AND epoch = p_epoch;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'namespace % is no longer served by epoch %', p_ns, p_epoch
                            USING ERRCODE = 'CN001';
                    END IF;
                END
                $$
                """,
                commitFunction(replacing: false, branches: ""),
                """
                CREATE FUNCTION canopy_set_setting(p_ns text, p_epoch bigint, p_lease_ms bigint, p_name text,
                    p_value text) RETURNS void LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM canopy_fence(p_ns, p_epoch, p_lease_ms);
                    IF p_value IS NULL THEN
                        DELETE FROM canopy_settings WHERE ns = p_ns AND name = p_name;
                    ELSE
                        INSERT INTO canopy_settings (ns, name, value) VALUES (p_ns, p_name, p_value)
                            ON CONFLICT (ns, name) DO UPDATE SET value = EXCLUDED.value;
                    END IF;
                END
                $$
                """,
            ]),
        Migration(
            name: "v2",
            statements: [
                """
                CREATE TABLE canopy_disconnect (ns text NOT NULL, session text NOT NULL, operations text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (ns, session))
                """,
                commitFunction(replacing: true, branches: disconnectBranches),
            ]),
        Migration(
            name: "v3",
            statements: [
                """
                CREATE TABLE canopy_write_ids (ns text NOT NULL, client text NOT NULL, highest bigint NOT NULL,
                    not_applied text, seen bigint NOT NULL, PRIMARY KEY (ns, client))
                """,
                commitFunction(
                    replacing: true, runs: runOperations + ", 'write_ids_store', 'write_ids_forget'",
                    branches: disconnectBranches + writeIDBranches),
            ]),
        Migration(
            name: "v4",
            statements: [
                commitFunction(
                    replacing: true, runs: runOperations + ", 'write_ids_store', 'write_ids_forget'",
                    deleteBelow: deleteBelowRun, settings: noBitmapScans, branches: disconnectBranches + writeIDBranches
                )
            ]),
        // Marks a database whose `canopy_nodes` may hold packed rows (see SQLite's
        // `v4-packed-records`): a build that cannot read them refuses it as newer.
        Migration(name: "v5-packed-records", statements: []),
    ]

    /// The operations `canopy_commit` applies a run at a time (v1, v2).
    private static let runOperations = "'delete_row', 'delete_below', 'upsert'"

    /// `canopy_commit`: v1 created it, v2 and v3 replaced it adding `branches` (more `WHEN` cases);
    /// v3 also applies its new operations a run at a time (`runs`), v4 deletes below a run of
    /// paths in one statement (`deleteBelow`).
    private static func commitFunction(
        replacing: Bool, runs: String = runOperations, deleteBelow: String = deleteBelowEach, settings: String = "",
        branches: String
    ) -> String {
        """
                \(replacing ? "CREATE OR REPLACE" : "CREATE") FUNCTION canopy_commit(p_ns text, p_epoch bigint, p_lease_ms bigint,
                    p_ops text[], p_a text[], p_b text[]) RETURNS void LANGUAGE plpgsql
                -- Plans for the actual arrays and table size: a plan cached while the table was empty
                -- would scan it whole once it is not.
                SET plan_cache_mode = force_custom_plan\(settings) AS $$
                DECLARE
                    i integer := 1;
                    j integer;
                    n integer := coalesce(array_length(p_ops, 1), 0);
                    ancestor text;
                BEGIN
                    PERFORM canopy_fence(p_ns, p_epoch, p_lease_ms);
                    WHILE i <= n LOOP
                        -- A run of deletes of rows, deletes below paths, or upserts is one statement.
                        j := i;
                        IF p_ops[i] IN (\(runs)) THEN
                            WHILE j < n AND p_ops[j + 1] = p_ops[i] LOOP
                                j := j + 1;
                            END LOOP;
                        END IF;
                        CASE p_ops[i]
                        WHEN 'delete_all' THEN
                            DELETE FROM canopy_nodes WHERE ns = p_ns;
                        WHEN 'delete_row' THEN
                            DELETE FROM canopy_nodes WHERE ns = p_ns AND path = ANY (p_a[i:j]);
                        WHEN 'delete_below' THEN
        \(deleteBelow)                        WHEN 'prune' THEN
                            ancestor := canopy_parent(p_a[i]);
                            WHILE ancestor IS NOT NULL LOOP
                                EXIT WHEN canopy_has_data(p_ns, ancestor);
                                DELETE FROM canopy_nodes WHERE ns = p_ns AND path = canopy_priority_row(ancestor);
                                ancestor := canopy_parent(ancestor);
                            END LOOP;
                        WHEN 'priority' THEN
                            DELETE FROM canopy_nodes WHERE ns = p_ns AND path = canopy_priority_row(p_a[i]);
                            IF p_b[i] <> '' AND canopy_has_data(p_ns, p_a[i]) THEN
                                INSERT INTO canopy_nodes (ns, path, value)
                                    VALUES (p_ns, canopy_priority_row(p_a[i]), p_b[i]);
                            END IF;
                        WHEN 'upsert' THEN
                            -- The same path twice in a run: the later value wins.
                            INSERT INTO canopy_nodes (ns, path, value)
                                SELECT DISTINCT ON (u.path) p_ns, u.path, u.value
                                FROM unnest(p_a[i:j], p_b[i:j]) WITH ORDINALITY AS u(path, value, position)
                                ORDER BY u.path, u.position DESC
                                ON CONFLICT (ns, path) DO UPDATE SET value = EXCLUDED.value;
        \(branches)                        END CASE;
                        i := j + 1;
                    END LOOP;
                END
                $$
        """
    }

    /// v1 to v3: a statement per path, one range of the primary key each (a join over them was
    /// planned as a scan of the table).
    private static let deleteBelowEach = """
                            -- One range of the primary key each (a join over them was planned as a scan).
                            FOREACH ancestor IN ARRAY p_a[i:j] LOOP
                                DELETE FROM canopy_nodes WHERE ns = p_ns AND path >= ancestor || '/' COLLATE "C"
                                    AND path < ancestor || '0' COLLATE "C";
                            END LOOP;

        """

    /// v4: one statement for the run, still one range of the primary key per path: the lateral
    /// subquery, kept apart from the join by `OFFSET 0`, runs once per path, so it cannot become a
    /// join planned as a scan of the table.
    private static let deleteBelowRun = """
                            -- One range of the primary key per path, in one statement: the lateral
                            -- subquery (kept from being flattened into a join by OFFSET 0) runs once per path.
                            DELETE FROM canopy_nodes WHERE ns = p_ns AND path = ANY (ARRAY(
                                SELECT below.path FROM unnest(p_a[i:j]) AS run(ancestor)
                                CROSS JOIN LATERAL (
                                    SELECT path FROM canopy_nodes WHERE ns = p_ns
                                        AND path >= run.ancestor || '/' COLLATE "C"
                                        AND path < run.ancestor || '0' COLLATE "C"
                                    OFFSET 0) AS below));

        """

    /// v4: the lookup of each path's range runs as an index scan; once the table had statistics it
    /// was planned as a bitmap scan, which costs more set up once per path than it saves.
    private static let noBitmapScans = "\n        SET enable_bitmapscan = off"

    private static let disconnectBranches = """
                                WHEN 'disconnect_store' THEN
                                    INSERT INTO canopy_disconnect (ns, session, operations) VALUES (p_ns, p_a[i], p_b[i])
                                        ON CONFLICT (ns, session) DO UPDATE SET operations = EXCLUDED.operations;
                                WHEN 'disconnect_remove' THEN
                                    DELETE FROM canopy_disconnect WHERE ns = p_ns AND session = p_a[i];

        """

    private static let writeIDBranches = """
                                WHEN 'write_ids_store' THEN
                                    -- One row per client and batch: the commit sends each client's latest.
                                    INSERT INTO canopy_write_ids (ns, client, highest, not_applied, seen)
                                        SELECT p_ns, u.client, (u.ids->>'highest')::bigint, u.ids->>'notApplied',
                                            (u.ids->>'seen')::bigint
                                        FROM unnest(p_a[i:j], p_b[i:j]::jsonb[]) AS u(client, ids)
                                        ON CONFLICT (ns, client) DO UPDATE SET highest = EXCLUDED.highest,
                                            not_applied = EXCLUDED.not_applied, seen = EXCLUDED.seen;
                                WHEN 'write_ids_forget' THEN
                                    DELETE FROM canopy_write_ids WHERE ns = p_ns AND client = ANY (p_a[i:j]);

        """
}
