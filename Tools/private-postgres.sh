# A private PostgreSQL for a script, in a folder of its own: sourced by Tools/chaos.sh and
# Tools/firebase-admin-compat/run.sh.
#
#   source Tools/private-postgres.sh
#   start_private_postgres FOLDER      # sets PRIVATE_POSTGRES_URL (database "canopy") and PRIVATE_POSTGRES_PID
#   stop_private_postgres
#
# initdb into FOLDER/data, the server on a Unix socket in FOLDER (no TCP port), as the postgres
# user when run as root. Needs PostgreSQL 15 or later's server programs (Debian: postgresql).

PRIVATE_POSTGRES_URL=""
PRIVATE_POSTGRES_PID=""

start_private_postgres() {
    local folder="$1" pg_bin as_postgres=() port=5432
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    if [ ! -x "$pg_bin/initdb" ]; then
        echo "private-postgres: PostgreSQL's server programs are missing (apt-get install postgresql)" >&2
        return 1
    fi
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$folder"
        as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    fi
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$folder/data" -A trust -U postgres --no-sync >"$folder/initdb.log" 2>&1 || {
        cat "$folder/initdb.log" >&2
        return 1
    }
    "${as_postgres[@]}" "$pg_bin/postgres" -D "$folder/data" -k "$folder" -c listen_addresses= -p "$port" \
        >"$folder/postgres.log" 2>&1 &
    PRIVATE_POSTGRES_PID=$!
    for _ in $(seq 1 100); do
        "$pg_bin/pg_isready" -q -h "$folder" -p "$port" && break
        sleep 0.1
    done
    "$pg_bin/psql" -q -h "$folder" -p "$port" -U postgres -c "CREATE DATABASE canopy" >/dev/null || {
        cat "$folder/postgres.log" >&2
        return 1
    }
    PRIVATE_POSTGRES_URL="postgres://postgres@localhost:$port/canopy?host=$folder"
    echo "private-postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $3 }') in $folder" >&2
}

stop_private_postgres() {
    if [ -n "$PRIVATE_POSTGRES_PID" ]; then
        kill -INT "$PRIVATE_POSTGRES_PID" 2>/dev/null || true
        wait "$PRIVATE_POSTGRES_PID" 2>/dev/null || true
        PRIVATE_POSTGRES_PID=""
    fi
}
