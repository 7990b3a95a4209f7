#!/usr/bin/env bash
# Starts the services terrarium's scale-out tests use, on loopback: Debian's PostgreSQL (a `terrarium`
# role and database, password `terrarium`) and Redis. Safe to run again. Prints the URLs to export:
#   TERRARIUM_TEST_POSTGRES=postgres://terrarium:terrarium@127.0.0.1:5432/terrarium
#   TERRARIUM_TEST_REDIS=redis://127.0.0.1:6379
# Needs the `postgresql` and `redis-server` packages (apt-get install -y postgresql redis-server).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

# PostgreSQL: Debian's default cluster, started without systemd.
$SUDO service postgresql start >/dev/null
for _ in $(seq 1 30); do
  if $SUDO su postgres -c "psql -qAtc 'select 1'" >/dev/null 2>&1; then break; fi
  sleep 1
done
$SUDO su postgres -c "psql -qAt" <<'SQL' >/dev/null
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'terrarium') THEN
    CREATE ROLE terrarium LOGIN PASSWORD 'terrarium' CREATEDB;
  END IF;
END $$;
SQL
if ! $SUDO su postgres -c "psql -qAtc \"select 1 from pg_database where datname = 'terrarium'\"" | grep -q 1; then
  $SUDO su postgres -c "createdb -O terrarium terrarium"
fi

# Redis: a daemon on loopback with AOF persistence (every write appended, fsynced each second), so that
# a restart keeps queued jobs and the results workers wrote. Without it a restarted Redis is empty: jobs and
# results are gone, and a waiting submitter finds its items' jobs missing and records them as failed.
REDIS_DATA_DIR="${REDIS_DATA_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/terrarium/redis}"
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  mkdir -p "$REDIS_DATA_DIR"
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --dir "$REDIS_DATA_DIR" \
    --logfile "$REDIS_DATA_DIR/redis.log" --appendonly yes --appendfsync everysec --save "" >/dev/null
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.2; done
elif [ "$(redis-cli -h 127.0.0.1 config get appendonly | tail -n 1)" != "yes" ]; then
  # Already running without AOF (started by hand, or by an older version of this script): left as it is,
  # since turning AOF on would write into whatever folder that server runs in.
  echo "warning: the Redis on 127.0.0.1:6379 has no AOF persistence: a restart loses queued jobs and results" \
    "(stop it and run this script again, or: redis-cli config set appendonly yes)" >&2
fi

echo "TERRARIUM_TEST_POSTGRES=postgres://terrarium:terrarium@127.0.0.1:5432/terrarium"
echo "TERRARIUM_TEST_REDIS=redis://127.0.0.1:6379"
