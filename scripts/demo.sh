#!/usr/bin/env bash
# The one-command local demo (run through `make demo`, which creates .venv first).
# SQLite under var/, real data from ../shared/data, real MiniLM targets trained here, served on 127.0.0.1:8000.
# A second run reuses the database, the trained models and the passwords: it loses nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the secret key, logs (and, through the settings, the database and models) go.
VAR="${DYNABENCH_VAR_DIR:-$PWD/var}"
# shellcheck source=scripts/lib/processes.sh
. scripts/lib/processes.sh
# Ctrl-C, SIGTERM (to the script or its process group) or a closed terminal stops the server, the job
# cluster and the background setup within seconds (STOP_GRACE_SECONDS, default 5, for the job in hand).
stop_processes_on_exit
PY=.venv/bin/python
mkdir -p "$VAR"
if [ ! -s "$VAR/secret_key" ]; then
  (umask 077 && "$PY" -c 'import secrets, sys; sys.stdout.write(secrets.token_urlsafe(50))' > "$VAR/secret_key")
fi
export SECRET_KEY_FILE="$VAR/secret_key"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export DEBUG="${DEBUG:-0}"
export DYNABENCH_HOST="${DYNABENCH_HOST:-127.0.0.1}" DYNABENCH_PORT="${DYNABENCH_PORT:-8000}"

"$PY" manage.py migrate --noinput
"$PY" manage.py collectstatic --noinput --verbosity 0
# With DEMO_ARGS the chosen setup runs to the end before serving. Without, the hate-speech task is laid
# out and its targets trained first (its evaluations are left for the background run), and the server
# opens; the hate-speech evaluations, then red-teaming (SmolLM2), sentiment, NLI and QA are set up in the background meanwhile
# (their targets and evaluations take most of the first run's time), each task opening for annotators
# when its targets are in and its leaderboard filling as its evaluations finish.
if [ -n "${DEMO_ARGS:-}" ]; then
  "$PY" manage.py setup_demo ${DEMO_ARGS}
else
  "$PY" manage.py setup_demo --tasks hate-speech --skip-evaluations
fi

# The job cluster runs background work: scheduled re-scoring of examples whose model failed,
# training jobs queued from the admin. It stops with the server: the job in hand is finished if it ends
# within the grace, else handed back (queued again after Q_CLUSTER["retry"] seconds).
start_process "$VAR/qcluster.log" "$PY" manage.py qcluster

echo
if [ -z "${DEMO_ARGS:-}" ]; then
  # Idempotent: tasks already set up are only checked; a run cut off by Ctrl-C resumes next time.
  # At the job workers' niceness (DYNABENCH_JOB_NICENESS, core/job_priority.py): the training and
  # evaluations of the background set-up take only the CPU the server leaves idle.
  start_process "$VAR/setup.log" nice -n "${DYNABENCH_JOB_NICENESS:-19}" "$PY" manage.py setup_demo --worker-running
  echo "The hate-speech leaderboard is being filled, and hate speech in uncertainty mode, red-teaming, sentiment, NLI"
  echo "and extractive QA set up, in the"
  echo "background (progress: $VAR/setup.log); each task opens for annotators when its targets are trained,"
  echo "its leaderboard fills as its evaluations finish; \"Demo ready.\" there means all are done."
fi
echo "Serving on http://$DYNABENCH_HOST:$DYNABENCH_PORT/  (Ctrl-C stops it; job log: $VAR/qcluster.log)"
# In the background too, so that a signal to the script alone is handled at once (bash runs a trap only
# once its foreground command has ended); the script lives as long as the server.
# demo_server: runserver, loading the open rounds' targets as it starts (demo/management/commands/demo_server.py).
start_process - "$PY" manage.py demo_server "$DYNABENCH_HOST:$DYNABENCH_PORT" --noreload
wait "$STARTED_PID"
