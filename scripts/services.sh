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

# Redis: a daemon on loopback, no persistence (tests only).
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save "" --appendonly no >/dev/null
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.2; done
fi

echo "TERRARIUM_TEST_POSTGRES=postgres://terrarium:terrarium@127.0.0.1:5432/terrarium"
echo "TERRARIUM_TEST_REDIS=redis://127.0.0.1:6379"
