# PostgreSQL for the store tests (the Guardian's session store and the MCP
# memory store on `postgres://`): Debian's PostgreSQL 15, a throw-away
# cluster owned by the postgres user, listening on 127.0.0.1 only, with one
# database and one password-authenticated role for the tests. Exports
# MNEMO_TEST_POSTGRES_URL; under CI=true the PostgreSQL tests fail without it.
# TLS: a throw-away CA (and an unrelated second CA) made here with openssl,
# a server certificate for localhost / 127.0.0.1 signed by the first, and
# ssl = on (a reload; plain connections keep working). Exports
# MNEMO_TEST_POSTGRES_TLS_CA and MNEMO_TEST_POSTGRES_OTHER_CA (PEM files) for
# the sslmode=verify-full tests. No key leaves the cluster's directory.
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
PG_TLS="$PG_DATA/tls"
if [ ! -s "$PG_TLS/server.pem" ]; then
    command -v openssl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
    mkdir -p "$PG_TLS"
    for ca in ca other-ca; do
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
            -keyout "$PG_TLS/$ca.key" -out "$PG_TLS/$ca.pem" -subj "/CN=mnemo CI PostgreSQL $ca" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    done
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$PG_TLS/server.key" \
        -out "$PG_TLS/server.csr" -subj "/CN=localhost" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' > "$PG_TLS/server.ext"
    openssl x509 -req -in "$PG_TLS/server.csr" -CA "$PG_TLS/ca.pem" -CAkey "$PG_TLS/ca.key" \
        -CAcreateserial -days 3650 -extfile "$PG_TLS/server.ext" -out "$PG_TLS/server.pem" 2>/dev/null
    rm -f "$PG_TLS/ca.key" "$PG_TLS/other-ca.key" "$PG_TLS/server.csr"
    chown -R postgres: "$PG_TLS"
    chmod 600 "$PG_TLS/server.key"
    chmod 644 "$PG_TLS/ca.pem" "$PG_TLS/other-ca.pem"
fi
if [ "$(pg_sql -c "SHOW ssl")" != on ]; then
    pg_sql -c "ALTER SYSTEM SET ssl_cert_file = '$PG_TLS/server.pem'"
    pg_sql -c "ALTER SYSTEM SET ssl_key_file = '$PG_TLS/server.key'"
    pg_sql -c "ALTER SYSTEM SET ssl = on"
    pg_sql -c "SELECT pg_reload_conf()" >/dev/null
    sleep 1
fi
export MNEMO_TEST_POSTGRES_TLS_CA="$PG_TLS/ca.pem"
export MNEMO_TEST_POSTGRES_OTHER_CA="$PG_TLS/other-ca.pem"
export MNEMO_TEST_POSTGRES_URL="postgres://mnemo:mnemo-test@127.0.0.1:$PG_PORT/mnemo_test"
echo "postgres $("$PG_BIN/postgres" --version) on 127.0.0.1:$PG_PORT (ssl $(pg_sql -c "SHOW ssl")): MNEMO_TEST_POSTGRES_URL, MNEMO_TEST_POSTGRES_TLS_CA set"
