# Sourced by .ci/run (and usable by hand): start a throwaway PostgreSQL on loopback for the tests and
# export LEDGER_TEST_POSTGRES. Installs Debian's postgresql package when it is missing (needs root).
# The server is stopped and its data removed when the calling shell exits.
if [ -z "${LEDGER_TEST_POSTGRES:-}" ]; then
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$pg_bin" ]; then
    echo "installing Debian's postgresql package" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  pg_data=$(mktemp -d /tmp/ledger-pg.XXXXXX)
  pg_user=postgres
  if [ "$(id -u)" = 0 ]; then
    chown "$pg_user" "$pg_data"
    as_pg() { runuser -u "$pg_user" -- "$@"; }
  else
    pg_user=$(id -un)
    as_pg() { "$@"; }
  fi
  as_pg "$pg_bin/initdb" -D "$pg_data" -A trust -U "$pg_user" >/dev/null
  as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_data/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pg_data -c max_connections=200" start >/dev/null
  ledger_stop_postgres() {
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$pg_data"
  }
  trap ledger_stop_postgres EXIT
  export LEDGER_TEST_POSTGRES="postgresql+psycopg://$pg_user@127.0.0.1:$pg_port/postgres"
  echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port for the tests" >&2
fi
