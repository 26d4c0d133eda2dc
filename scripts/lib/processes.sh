# shellcheck shell=bash
# Starting and stopping a script's long-running processes (scripts/demo.sh; scripts/serve.sh may reuse it),
# so that any stop ends all of them within seconds: Ctrl-C, SIGTERM to the script alone or to its whole
# process group (`kill -TERM -<pgid>`), a closed terminal (SIGHUP), or the server exiting by itself.
#
#   . scripts/lib/processes.sh
#   stop_processes_on_exit                   # once, before the first start_process
#   start_process var/qcluster.log "$PY" manage.py qcluster
#   start_process - "$PY" manage.py runserver 127.0.0.1:8000    # "-": output stays on the terminal
#   wait "$STARTED_PID"                      # the script lives as long as the server
#
# start_process LOG CMD [ARG...]
#     Runs CMD in the background in a process group of its own (its pgid is its pid), stdin from
#     /dev/null, stdout and stderr to the file LOG (or inherited with "-"). Sets STARTED_PID; adds the pid
#     to PROCESS_PIDS.
# stop_processes [GRACE]
#     Sends SIGTERM to each started process still running, to it alone (never to its group), waits up
#     to GRACE seconds (default $STOP_GRACE_SECONDS, else 5; whole seconds) until every process of its
#     group has gone, then SIGKILLs each group still there, and reaps them. Safe to call twice; called
#     again during a stop, it kills at once.
# stop_processes_on_exit
#     Traps INT, TERM and HUP (stop_processes, then exit 130, 143, 129) and EXIT (stop_processes). During
#     a stop, a second Ctrl-C (INT) kills at once; a repeated TERM or HUP changes nothing: `make` passes a
#     SIGTERM on to its recipe, so `kill -TERM -<pgid of make>` reaches a script run by make twice, and
#     the second must not cut the job in hand short.
#
# Why a group of its own, and the signal to the leader only: `manage.py qcluster` (django-q2 1.11) stops
# in order only when its parent alone is signalled. The parent then sets the sentinel's stop event; the
# pusher stops taking jobs; each worker finishes the jobs it was handed (results saved and acknowledged);
# everything exits, in about a second when idle. When SIGTERM reaches the whole group instead
# (`kill -TERM -<pgid>`, a process manager signalling every process), the sentinel and the workers die
# of it at once (django-q2 resets SIGTERM to the default action in them), and the parent's handler then
# blocks for ever in `stop_event.set()`: the Condition under the event waits for the dead sentinel,
# which was waiting on it, to acknowledge the wake-up (a futex wait; only SIGKILL ends it). A group
# SIGINT (Ctrl-C) is orderly, as they ignore SIGINT, but has no bound: it waits for the job in hand.
# A group of its own keeps the terminal's and the user's group signals away from the cluster; the
# script forwards the stop to the parent alone, and GRACE bounds the wait. After it the group is killed:
# a job handed out and not acknowledged (the one running, plus those the pusher had queued: up to
# workers + queue_limit + 1) is handed out again by the ORM broker Q_CLUSTER["retry"] seconds after it
# was taken, and is lost on Redis (its broker removes a job from the list when it hands it out).
#
# Plain bash 3.2 (macOS): no `wait -n`, no associative arrays; PROCESS_PIDS is a space-separated string.

PROCESS_PIDS=""
STARTED_PID=""
_STOPPING=""
_KILL_NOW=""

start_process() {
  local log="$1" monitor_was_on=""
  shift
  case $- in *m*) monitor_was_on=1 ;; esac
  # Job control (monitor mode) puts each background job in a process group of its own.
  set -m
  if [ "$log" = "-" ]; then
    "$@" </dev/null &
  else
    "$@" </dev/null >"$log" 2>&1 &
  fi
  STARTED_PID=$!
  [ -n "$monitor_was_on" ] || set +m
  PROCESS_PIDS="$PROCESS_PIDS $STARTED_PID"
}

# The started processes still running: still this shell's children (one that has ended is not
# signalled, as its pid may since be another process's).
_running_started_processes() {
  local pid="" parent=""
  for pid in $PROCESS_PIDS; do
    parent="$(ps -o ppid= -p "$pid" 2>/dev/null || true)"
    if [ "${parent// /}" = "$$" ]; then printf '%s ' "$pid"; fi
  done
}

stop_processes() {
  local grace="${1:-${STOP_GRACE_SECONDS:-5}}" targets="" pid="" alive="" ticks=0
  case "$grace" in '' | *[!0-9]*) grace=5 ;; esac
  # A second signal during a stop (Ctrl-C again) kills at once.
  if [ -n "$_STOPPING" ]; then grace=0; fi
  _STOPPING=1
  # Only processes still running: the group of one that has ended may since be another's.
  targets="$(_running_started_processes)"
  if [ -n "$targets" ] && [ "$grace" -gt 0 ]; then
    echo "Stopping (up to ${grace}s for the work in hand; Ctrl-C again stops at once)..." >&2
  fi
  for pid in $targets; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  while [ -n "$targets" ]; do
    alive=""
    for pid in $targets; do
      # Any process of the group, the leader or what it started (a group outlives its leader).
      if kill -0 -- "-$pid" 2>/dev/null; then alive="$alive $pid"; fi
    done
    if [ -z "$alive" ] || [ "$ticks" -ge $((grace * 10)) ] || [ -n "$_KILL_NOW" ]; then break; fi
    sleep 0.1
    ticks=$((ticks + 1))
  done
  for pid in $alive; do
    if [ -n "$_KILL_NOW" ]; then
      echo "Process group $pid still running after a second Ctrl-C: killing it (SIGKILL)." >&2
    else
      echo "Process group $pid still running ${grace}s after SIGTERM: killing it (SIGKILL)." >&2
    fi
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  for pid in $PROCESS_PIDS; do
    wait "$pid" 2>/dev/null || true
  done
  PROCESS_PIDS=""
  _STOPPING=""
  _KILL_NOW=""
  return 0
}

# The trap of INT, TERM and HUP: NAME STATUS. Runs between the commands of a stop already under way
# (bash runs a trap once the command in hand, such as its `sleep 0.1`, returns).
_on_stop_signal() {
  if [ -n "$_STOPPING" ]; then
    if [ "$1" = INT ]; then _KILL_NOW=1; fi
    return 0
  fi
  stop_processes
  exit "$2"
}

stop_processes_on_exit() {
  trap '_on_stop_signal INT 130' INT
  trap '_on_stop_signal TERM 143' TERM
  trap '_on_stop_signal HUP 129' HUP
  trap 'stop_processes' EXIT
}
