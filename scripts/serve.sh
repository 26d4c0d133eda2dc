#!/usr/bin/env bash
# The production profile (run through `make serve`; docs/deployment.md): gunicorn with uvicorn workers
# serving the ASGI app and static files (whitenoise), django-q2's cluster on Redis, PostgreSQL as the database.
# Every setting comes from the environment (dynabench/settings.py, .env.example); the defaults below
# are this machine's services on loopback. Ctrl-C (or SIGTERM to this script) stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the secret key, logs (and, through the settings, the database and models) go.
VAR="${DYNABENCH_VAR_DIR:-$PWD/var}"
PY=.venv/bin/python
mkdir -p "$VAR"
if [ -z "${SECRET_KEY:-}" ] && [ -z "${SECRET_KEY_FILE:-}" ]; then
  if [ ! -s "$VAR/secret_key" ]; then
    (umask 077 && "$PY" -c 'import secrets, sys; sys.stdout.write(secrets.token_urlsafe(50))' > "$VAR/secret_key")
  fi
  export SECRET_KEY_FILE="$VAR/secret_key"
fi
export DEBUG="${DEBUG:-0}"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/dynabench}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export DYNABENCH_JOB_WORKERS="${DYNABENCH_JOB_WORKERS:-2}"
# A pool of database connections per process (dynabench/settings.py): the ASGI workers run each request in
# a thread of its own.
export DYNABENCH_DB_POOL="${DYNABENCH_DB_POOL:-16}"
export DYNABENCH_HOST="${DYNABENCH_HOST:-127.0.0.1}" DYNABENCH_PORT="${DYNABENCH_PORT:-8000}"
# A stop gives gunicorn its graceful_timeout (10 s) to finish the requests in hand.
export STOP_GRACE_SECONDS="${STOP_GRACE_SECONDS:-12}"

# On this kind of machine the database may not exist yet; elsewhere the operator creates it.
if [ "$DATABASE_URL" = "postgres://postgres@127.0.0.1:5432/dynabench" ] && command -v createdb >/dev/null; then
  createdb -h 127.0.0.1 -U postgres dynabench 2>/dev/null || true
fi
"$PY" manage.py migrate --noinput
"$PY" manage.py collectstatic --noinput --verbosity 0
"$PY" manage.py ensure_schedules

# Ctrl-C or SIGTERM (to the script or its process group) stops gunicorn (requests in hand finish) and
# the job cluster (the job in hand finishes within STOP_GRACE_SECONDS, 12 here) within seconds.
# shellcheck source=scripts/lib/processes.sh
. scripts/lib/processes.sh
stop_processes_on_exit
mkdir -p "$VAR/log"
start_process "$VAR/log/qcluster.log" "$PY" manage.py qcluster
QCLUSTER_PID=$STARTED_PID
start_process - "$PY" -m gunicorn -c gunicorn.conf.py
GUNICORN_PID=$STARTED_PID
echo "Serving on http://$DYNABENCH_HOST:$DYNABENCH_PORT/ with gunicorn (${DYNABENCH_WEB_WORKERS:-two per core} workers)," \
  "jobs on Redis ($DYNABENCH_JOB_WORKERS workers, log $VAR/log/qcluster.log); health: /health/; Ctrl-C stops it."
# Either process ending ends the profile: a half-running service is worse than a stopped one.
wait -n "$GUNICORN_PID" "$QCLUSTER_PID" || true
