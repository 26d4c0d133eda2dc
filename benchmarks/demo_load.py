"""Load on the demo's server: many annotators at once against ``manage.py demo_server`` on SQLite.

Run:  .venv/bin/python benchmarks/demo_load.py [--annotators 50] [--validators 0] [--seconds 60]
                                               [--think 0] [--port 8500] [--no-qcluster] [--server-log FILE]
                                               [--server-workers N]

What it does, all on loopback:
  1. in a new temporary folder (removed at the end) migrates an SQLite database
     (``DATABASE_URL=sqlite:///<folder>/db.sqlite3``; otherwise the demo's settings: no Redis, the
     per-process memory cache, django-q2 on the ORM broker, ``DEBUG=0``) and lays out the hate-speech task
     as ``load_production.set_up`` does: round 1 whose target is ``benchmarks.minilm_model``'s fitted
     all-MiniLM-L6-v2, one API token per client, 100 examples for validators. Example creation is not
     throttled (``DYNABENCH_CREATE_RATE=100000/min``): the load is the point;
  2. starts ``manage.py qcluster`` (unless ``--no-qcluster``) and ``manage.py demo_server
     127.0.0.1:<port> --noreload`` as ``scripts/demo.sh`` does, waits for /health/ and warms the server
     up (``load_production.warm_up``: the target loaded, 4 concurrent writes under 1 s);
  3. for ``--seconds``, runs ``load_production``'s annotator and validator client loops, all clients
     starting at once (``--think 0``: each sends again as soon as it is answered; a request gets 30 s,
     a create is retried with its ``Idempotency-Key`` on no answer or a 5xx), while sampling the
     server's accept queue (``/proc/net/tcp``, every 50 ms);
  4. stops the server and the cluster and reads every example and vote back from the database.

Printed: the machine's load averages before and after; the server's listen backlog (``ss``'s Send-Q)
and the peak of its accept queue; requests, latency p50/p95/max (ms) per kind (create, next, vote);
examples stored per second; status counts; requests with no answer (refused, reset or timed out:
status 0) and retries; integrity as ``load_production`` counts it (lost: acknowledged but not stored;
duplicated: one key stored twice; stored but not acknowledged; votes lost; double-counted votes; 5xx);
the kernel's TcpExt ListenOverflows and ListenDrops over the run (``/proc/net/netstat``: counted for the
whole network namespace, so another program's overflows count too); the server log's 5xx responses
and "database is locked" lines. The clients run on the same cores as the server: the figures are a
floor, and depend on what else runs on the machine (say so with them).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.load_production import (  # noqa: E402
    Recorder,
    run_load,
    set_up,
    summarise,
    wait_healthy,
    warm_up,
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--validators", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=0.0, help="mean seconds between a client's requests")
    parser.add_argument("--port", type=int, default=8500)
    parser.add_argument("--no-qcluster", action="store_true", help="do not start the job cluster")
    parser.add_argument("--server-workers", type=int, help="demo_server --workers (default: its own, 8)")
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's output (access log)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="dynabench-demo-load-"))
    try:
        run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args, workdir: Path) -> None:
    """Set up in ``workdir``, serve, load, report (steps 1-4 of the module's docstring)."""
    env = demo_environment(workdir)
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    import django

    django.setup()
    from django.db import connections

    setup = set_up(args.annotators, args.validators, workdir)
    connections.close_all()

    log_path = workdir / "server.log"
    processes = []
    if not args.no_qcluster:
        processes.append(start([sys.executable, "manage.py", "qcluster"], env, workdir / "qcluster.log"))
    server_command = [sys.executable, "manage.py", "demo_server", f"127.0.0.1:{args.port}", "--noreload"]
    if args.server_workers:
        server_command += ["--workers", str(args.server_workers)]
    processes.append(start(server_command, env, log_path))
    base = f"http://127.0.0.1:{args.port}"
    load_before = os.getloadavg()
    try:
        wait_healthy(base)
        warm_up(base, setup, 1)
        backlog = listen_backlog(args.port)
        sampler = AcceptQueueSampler(args.port)
        kernel_before = listen_counters()
        sampler.start()
        rec = run_load(args, base, setup)
        sampler.stop()
        kernel_after = listen_counters()
    finally:
        for process in reversed(processes):
            stop(process)
    load_after = os.getloadavg()
    server_log = log_path.read_text(encoding="utf-8", errors="replace")
    if args.server_log:
        args.server_log.write_text(server_log, encoding="utf-8")

    print(
        f"demo server: manage.py demo_server on SQLite, job cluster {'off' if args.no_qcluster else 'on'}; "
        f"{os.cpu_count()} cores; load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        "(1 min)"
    )
    print(f"listen backlog (ss Send-Q): {backlog}, peak accept queue (sampled): {sampler.peak}")
    report(args, setup, rec)
    print(
        "kernel over the run (namespace-wide): "
        + ", ".join(f"{name} +{kernel_after[name] - kernel_before[name]}" for name in kernel_before)
    )
    fives = len(re.findall(r'" 5\d\d \d+', server_log))
    locked = server_log.count("database is locked")
    print(f"server log: 5xx responses {fives}, 'database is locked' lines {locked}")
    connections.close_all()


def demo_environment(workdir: Path) -> dict[str, str]:
    """The environment of the throwaway demo in ``workdir``: the demo's settings on
    ``<workdir>/db.sqlite3``, with ``DEBUG=0``, a fresh secret key, offline, and creation unthrottled."""
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(40),
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "DYNABENCH_VAR_DIR": str(workdir / "var"),
        "DYNABENCH_MODEL_DIR": str(workdir / "models"),
        "DYNABENCH_CREATE_RATE": "100000/min",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DJANGO_SETTINGS_MODULE": "dynabench.settings",
    }
    env.pop("REDIS_URL", None)
    return env


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``command`` in the checkout, in a session of its own (stopped with ``stop``), its output to ``log``."""
    out = open(log, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to ``process``'s session, SIGKILL after ``grace`` seconds."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def listen_counters() -> dict[str, int]:
    """The kernel's TcpExt ``ListenOverflows`` and ``ListenDrops`` (counts since boot, for this network
    namespace) from ``/proc/net/netstat``."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], map(int, values.split()[1:]), strict=True))
            return {name: table[name] for name in ("ListenOverflows", "ListenDrops")}
    raise RuntimeError("no TcpExt line in /proc/net/netstat")


def listen_backlog(port: int) -> str:
    """The listen backlog of the socket listening on 127.0.0.1:``port`` as ``ss -ltn`` shows it (its
    Send-Q column); "?" when ``ss`` is missing or shows no such socket."""
    try:
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    fields = out.split()
    return fields[2] if len(fields) >= 3 else "?"


class AcceptQueueSampler:
    """Samples, every ``interval`` seconds on a daemon thread, how many connections wait in the accept
    queue of the IPv4 socket listening on ``port`` (``/proc/net/tcp``'s rx_queue of a LISTEN row);
    ``peak`` is the largest seen."""

    def __init__(self, port: int, interval: float = 0.05) -> None:
        self.address = f"0100007F:{port:04X}"
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1] == self.address and fields[3] == "0A":  # LISTEN
                    self.peak = max(self.peak, int(fields[4].split(":")[1], 16))


def report(args, setup: dict, rec: Recorder) -> None:
    """Print the latencies, throughput, status counts and integrity counts of ``rec`` (see the module's
    docstring), reading the clients' examples and votes back from the database
    (``load_production.summarise``)."""
    summary = summarise(rec, [uid for uid, _ in setup["annotators"]], [uid for uid, _ in setup["validators"]])
    created = summary["created"]
    print(
        f"clients: {args.annotators} annotators, {args.validators} validators, all at once, "
        f"{rec.elapsed:.1f} s, think time {args.think:g} s (mean, exponential)"
    )
    print(f"{'request':10}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for kind in ("create", "next", "vote", "all"):
        n, p50, p95, top = summary["latency"][kind]
        if n or kind == "all":
            print(f"{kind:10}{n:7d}{p50:10.0f}{p95:10.0f}{top:10.0f}")
    print(f"examples stored: {created} in {rec.elapsed:.1f} s = {created / rec.elapsed:.1f} examples/s")
    print(
        "status counts: "
        + ", ".join(f"{kind} {status}: {n}" for (kind, status), n in sorted(rec.statuses.items()))
    )
    print(
        f"requests with no answer: {rec.unanswered}, retries: {rec.retries}, votes acknowledged: {len(rec.votes)}"
    )
    print(
        f"integrity: lost {summary['lost']}, duplicated {summary['duplicated']}, stored but not acknowledged "
        f"{summary['unacknowledged']}, votes lost {summary['votes_lost']}, double-counted votes "
        f"{summary['double_votes']}, 5xx {summary['fives']}"
    )


if __name__ == "__main__":
    main()
