# PostgreSQL for the store tests (the Guardian's session store and the MCP
# memory store on `postgres://`): Debian's PostgreSQL 15, a throw-away
# cluster owned by the postgres user, listening on 127.0.0.1 only, with one
# database and one password-authenticated role for the tests. Exports
# MNEMO_TEST_POSTGRES_URL; under CI=true the PostgreSQL tests fail without it.
# Sourced by .ci/run as root; idempotent (a cluster already up is reused).
PG_MAJOR=15
PG_BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
PG_PORT="${MNEMO_PG_PORT:-54329}"
PG_DATA="${MNEMO_PG_DATA:-/tmp/mnemo-ci-postgres}"
if [ ! -x "$PG_BIN/initdb" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-$PG_MAJOR" >/dev/null
fi
if ! "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
    rm -rf "$PG_DATA"
    mkdir -p "$PG_DATA"
    chown postgres: "$PG_DATA"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DATA" -U postgres \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_DATA -c max_connections=200" \
        start >/dev/null
fi
pg_sql() { runuser -u postgres -- "$PG_BIN/psql" -h "$PG_DATA" -p "$PG_PORT" -U postgres -qAt -v ON_ERROR_STOP=1 "$@"; }
if [ "$(pg_sql -c "SELECT 1 FROM pg_roles WHERE rolname = 'mnemo'")" != 1 ]; then
    pg_sql -c "CREATE ROLE mnemo LOGIN PASSWORD 'mnemo-test'"
fi
if [ "$(pg_sql -c "SELECT 1 FROM pg_database WHERE datname = 'mnemo_test'")" != 1 ]; then
    pg_sql -c "CREATE DATABASE mnemo_test OWNER mnemo"
fi
export MNEMO_TEST_POSTGRES_URL="postgres://mnemo:mnemo-test@127.0.0.1:$PG_PORT/mnemo_test"
echo "postgres $("$PG_BIN/postgres" --version) on 127.0.0.1:$PG_PORT: MNEMO_TEST_POSTGRES_URL set"
