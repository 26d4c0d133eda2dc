"""A stop of the demo ends every process within seconds, finishing or handing back the job in hand.

Each test runs a small bash script the way scripts/demo.sh runs its processes (scripts/lib/processes.sh:
``manage.py qcluster`` against the test database and a stand-in server started with ``start_process``,
the script waiting on the server), in a session of its own as a terminal runs a job, and stops it as a
user does: SIGTERM or SIGINT (Ctrl-C) to its whole process group, or SIGTERM to the script alone. Every
process the script started, the cluster's sentinel, workers, monitor and pusher included, must be gone
within ``STOP_WITHIN`` seconds. Started the old way (qcluster in the script's own group), a group SIGTERM
reached the sentinel and the workers directly and left the cluster's parent hung in django-q2's
``stop_event.set()`` until SIGKILL (see scripts/lib/processes.sh).

The cluster is a real ``manage.py qcluster`` on the ORM broker, so the tests commit
(``transaction=True``) for it to see the jobs; its processes are all gone, their database connections
with them, before the test database is flushed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.models import OrmQ, Task
from django_q.tasks import async_task

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
STOP_WITHIN = 10  # seconds: the library's grace (5 s by default) and a margin
START_WITHIN = 90  # seconds for the cluster to start (Django set-up, twice: script and cluster)

SCRIPT = """\
set -euo pipefail
cd "$REPO"
. scripts/lib/processes.sh
stop_processes_on_exit
start_process "$CLUSTER_LOG" "$PY" manage.py qcluster
# Stands in for runserver (demo.sh) or gunicorn (serve.sh).
start_process - "$PY" -c 'import time; time.sleep(600)'
wait "$STARTED_PID"
"""


def _default_stop_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _database_url() -> str:
    """The test database (``test_<name>``), for the cluster to connect to."""
    db = connection.settings_dict
    assert db["ENGINE"] == "django.db.backends.postgresql", (
        "the cluster runs in another process and needs a database it can reach: run the tests on "
        "PostgreSQL (DATABASE_URL=postgres://...)"
    )
    user = quote(db["USER"] or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    return f"postgres://{user}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, state) of every process of the machine."""
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat="],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    table = {}
    for line in out.splitlines():
        pid, ppid, pgid, state = line.split()[:4]
        table[int(pid)] = (int(ppid), int(pgid), state)
    return table


def _started_by(root: int) -> tuple[set[int], set[int]]:
    """The live processes of ``root``'s tree, and their process groups."""
    table = _processes()
    pids, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, state) in table.items():
            if ppid == parent and pid not in pids and not state.startswith("Z"):
                pids.add(pid)
                frontier.append(pid)
    return pids, {table[pid][1] for pid in pids if pid in table}


def _alive(pids: set[int], groups: set[int]) -> list[int]:
    """Which of ``pids``, or any process of ``groups``, still runs (zombies have ended)."""
    return sorted(
        pid
        for pid, (_, pgid, state) in _processes().items()
        if (pid in pids or pgid in groups) and not state.startswith("Z")
    )


class Demo:
    """The script, started in a session of its own; ``stop`` signals it and times the end of all."""

    def __init__(self, tmp_path: Path, grace: int):
        self.log = tmp_path / "qcluster.log"
        self.log.touch()
        script = tmp_path / "stand_in_demo.sh"
        script.write_text(SCRIPT)
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("REDIS_URL", "Q_CLUSTER_NAME", "DJANGO_SETTINGS_MODULE")
        }
        env.update(
            REPO=str(REPO),
            PY=sys.executable,
            CLUSTER_LOG=str(self.log),
            DATABASE_URL=_database_url(),
            DJANGO_SETTINGS_MODULE="dynabench.settings",
            DYNABENCH_JOBS_SYNC="0",
            DYNABENCH_JOB_WORKERS="1",
            STOP_GRACE_SECONDS=str(grace),
        )
        self.output_path = tmp_path / "script.out"
        self.output = self.output_path.open("w")
        self.process = subprocess.Popen(
            ["bash", str(script)],
            env=env,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # As a terminal starts a job: SIGINT and SIGTERM at their defaults. A test run started in
            # the background (``nohup pytest &``) ignores SIGINT, children inherit that, and bash cannot
            # undo a signal ignored on entry, so Ctrl-C would never reach the script.
            preexec_fn=_default_stop_signals,
        )
        self.pids: set[int] = {self.process.pid}
        self.groups: set[int] = {self.process.pid}

    def wait_for_log(self, text: str, within: float = START_WITHIN) -> None:
        deadline = time.monotonic() + within
        while text not in self.log.read_text():
            assert self.process.poll() is None, f"the script ended early:\n{self.log.read_text()}"
            assert time.monotonic() < deadline, f"no {text!r} in the cluster's log:\n{self.log.read_text()}"
            time.sleep(0.1)
        pids, groups = _started_by(self.process.pid)
        self.pids |= pids
        self.groups |= groups

    def stop(
        self, sig: signal.Signals, *, whole_group: bool, again: tuple[float, bool] | None = None
    ) -> float:
        """Sends ``sig`` like a terminal (the whole group) or like ``kill <pid>``, and with ``again``
        ``(delay in seconds, whole_group)`` sends it once more after that delay; seconds from the first
        until every process has gone (fails after STOP_WITHIN)."""
        assert len(self.groups) >= 3 and len(self.pids) >= 7, "script, cluster (5 processes), server"
        started = time.monotonic()
        if whole_group:
            os.killpg(self.process.pid, sig)
        else:
            os.kill(self.process.pid, sig)
        if again is not None:
            delay, group_again = again
            time.sleep(delay)
            (os.killpg if group_again else os.kill)(self.process.pid, sig)
        while True:
            self.process.poll()
            alive = _alive(self.pids, self.groups)
            elapsed = time.monotonic() - started
            if not alive:
                self.process.wait(timeout=5)
                return elapsed
            assert elapsed < STOP_WITHIN, (
                f"still running {STOP_WITHIN}s after {sig.name}: {alive}\n{self.log.read_text()}"
            )
            time.sleep(0.1)

    def kill_what_is_left(self) -> None:
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)
        self.output.close()


@pytest.fixture
def demo(tmp_path):
    """``demo(grace=5)`` starts the stand-in demo; whatever is left is killed after the test."""
    started: list[Demo] = []

    def start(grace: int = 5) -> Demo:
        started.append(Demo(tmp_path, grace))
        return started[-1]

    yield start
    for each in started:
        each.kill_what_is_left()


def _enqueue_sleep(seconds: int) -> str:
    """Queues ``time.sleep(seconds)`` on the ORM broker, as the project's jobs are queued."""
    broker = ORM(list_key=settings.Q_CLUSTER["name"])
    return async_task("time.sleep", seconds, task_name=f"sleep-{seconds}", sync=False, broker=broker)


@pytest.mark.parametrize(
    "sig, whole_group",
    [(signal.SIGTERM, True), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["SIGTERM to the group", "Ctrl-C (SIGINT to the group)", "SIGTERM to the script alone"],
)
def test_a_stop_ends_the_server_and_every_process_of_the_cluster(demo, sig, whole_group):
    running = demo()
    running.wait_for_log("running.")
    running.stop(sig, whole_group=whole_group)
    assert running.process.returncode == 128 + {signal.SIGTERM: 15, signal.SIGINT: 2}[sig]
    # The cluster's own orderly stop, not the kill after the grace.
    assert "has stopped." in running.log.read_text()


def test_a_job_that_ends_within_the_grace_is_finished_and_acknowledged(demo):
    task_id = _enqueue_sleep(1)
    running = demo()
    running.wait_for_log("processing")
    running.stop(signal.SIGTERM, whole_group=True)
    assert Task.objects.get(id=task_id).success
    assert not OrmQ.objects.exists()


def test_a_job_still_running_after_the_grace_is_handed_back_to_the_queue(demo):
    task_id = _enqueue_sleep(600)
    running = demo(grace=2)
    running.wait_for_log("processing")
    running.stop(signal.SIGTERM, whole_group=True)
    assert not Task.objects.filter(id=task_id).exists()
    # Not acknowledged: the ORM broker hands the job out again once its lock ends, Q_CLUSTER["retry"]
    # seconds after the cluster took it (on Redis it would be lost).
    (queued,) = OrmQ.objects.all()
    assert queued.task_id() == task_id
    retry = timedelta(seconds=settings.Q_CLUSTER["retry"])
    assert timezone.now() + retry - timedelta(minutes=2) < queued.lock <= timezone.now() + retry


def test_a_sigterm_passed_on_by_make_does_not_cut_the_job_in_hand_short(demo):
    """``kill -TERM -<pgid of make>`` reaches the script twice: from the group signal and from make,
    which passes SIGTERM on to its recipe. The second is no impatient user: the job still gets its
    grace and is finished (before, the second signal killed everything at once)."""
    task_id = _enqueue_sleep(2)
    running = demo()
    running.wait_for_log("processing")
    running.stop(signal.SIGTERM, whole_group=True, again=(0.05, False))
    assert Task.objects.get(id=task_id).success
    assert "killing it (SIGKILL)" not in running.output_path.read_text()


def test_a_second_ctrl_c_stops_at_once(demo):
    _enqueue_sleep(600)
    running = demo(grace=30)
    running.wait_for_log("processing")
    elapsed = running.stop(signal.SIGINT, whole_group=True, again=(1.0, True))
    assert elapsed < 1.0 + 3.0  # not the 30 s grace
    assert "still running after a second Ctrl-C: killing it (SIGKILL)" in running.output_path.read_text()
