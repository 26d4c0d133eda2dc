"""Ordinary pages while generations queue: ``/health/``, the sign-in page and the red-teaming page, timed
while ``--generations`` red-teamers all want an answer of the local model at once from the demo's server.

Run:  .venv/bin/python benchmarks/generation_queue.py [--generations 20] [--tokens 96] [--probes 20]
                                                      [--interval 1] [--port 8540] [--server-workers N]
                                                      [--queue N] [--server-log FILE]

What it does, all on loopback, in a new temporary folder (removed at the end):
  1. the set-up of ``benchmarks/red_team_load.py`` (its ``set_up``): an SQLite database with the demo's
     settings, the built-in ``red-team`` task, round 1 open on SQuAD test passages, SmolLM2-135M-Instruct
     as its target (greedy, ``--tokens`` new tokens at most), signed-in users;
  2. starts ``manage.py demo_server 127.0.0.1:<port> --noreload`` as ``make demo`` serves (a pool of 8
     request threads unless ``--server-workers``; ``--queue N`` sets its ``DYNABENCH_GENERATION_QUEUE``,
     e.g. 1000 for a line without a bound, as before the bound was built), waits for ``/health/`` and
     warms it up with one streamed turn;
  3. **idle**: ``--probes`` rounds of three GETs one after another, ``/health/``, ``/accounts/login/``
     (anonymous) and the red-teaming page of a signed-in user who is not generating, a round started
     every ``--interval`` seconds on a thread of its own (so a round stuck behind busy server threads
     does not hold back the next: every round counts), each GET given up after ``PROBE_TIMEOUT``
     seconds (status 0, counted at the time it waited);
  4. **queued**: ``--generations`` red-teamers start together (a barrier), each sending its first
     message from the page (``POST .../red-team/send/`` with ``Accept: text/event-stream``, as the
     page's script does) and reading the answer to its end. A send answered 503 (the line is full) is
     sent again, the same form with the same ``client_token``, after its ``Retry-After`` (at most 30 s),
     as a patient person would, until it is answered. Meanwhile the same rounds of three GETs start
     every ``--interval`` seconds until every red-teamer has its answer.
Prints, for each probed page, p50 / p95 / max idle and while queued (the aim: p95 under 1 s while
queued), then what the red-teamers saw: answers, 503s and their ``Retry-After`` and ``waiting``, the
time until all were answered, turns stored (answered / failed), and the server log's 5xx lines.
The clients run on the same cores as the server: say what else ran with the figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.demo_load import demo_environment, stop  # noqa: E402
from benchmarks.load_production import percentile  # noqa: E402
from benchmarks.red_team_load import (  # noqa: E402
    CLIENT_TIMEOUT,
    PAGE,
    SEND,
    PageClient,
    loads,
    serve_warmed,
    set_up,
)

PROMPT = "Summarise the passage in three sentences."
#: Longest ``Retry-After`` a red-teamer waits before sending again, in seconds.
MAX_RETRY_WAIT = 30.0
#: Seconds a probe waits for its answer before it counts as none (status 0).
PROBE_TIMEOUT = 120.0


@dataclass
class Probe:
    path: str
    status: int
    seconds: float
    at: float


@dataclass
class RedTeamer:
    """One red-teamer's sends: the status of each try, the ``Retry-After`` and ``waiting`` of each 503,
    and whether and when (seconds from the start) the answer ended."""

    statuses: list[int] = field(default_factory=list)
    retry_after: list[float] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    answered_at: float | None = None
    finish_reason: str | None = None
    generated_s: float | None = None  # the server's record: from the runner's start to the answer's end
    queued_s: float = 0.0  # of which waiting in line for the slot
    problem: str = ""


def probe_round(port: int, headers: dict, started: float, out: list[Probe]) -> None:
    """One GET of each probed page, one after another, each timed from sending to its whole body."""
    for name, path, sent_headers in (
        ("/health/", "/health/", {}),
        ("/accounts/login/", "/accounts/login/", {}),
        ("red-teaming page", PAGE, headers),
    ):
        began = time.perf_counter()
        status = get_within(port, path, sent_headers, PROBE_TIMEOUT)
        out.append(Probe(name, status, time.perf_counter() - began, began - started))


def get_within(port: int, path: str, headers: dict, timeout: float) -> int:
    """The status of a GET read to its end; 0 when no whole answer came within ``timeout`` seconds."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def probe_rounds(port: int, headers: dict, interval: float, keep_going, started: float) -> list[Probe]:
    """Rounds of ``probe_round`` started every ``interval`` seconds, each on a thread of its own, while
    ``keep_going()``; returns the probes once every round has ended."""
    out: list[Probe] = []
    rounds = []
    while keep_going():
        thread = threading.Thread(target=probe_round, args=(port, headers, started, out), daemon=True)
        thread.start()
        rounds.append(thread)
        time.sleep(interval)
    for thread in rounds:
        thread.join()
    return out


def red_teamer(port, setup, index, barrier, started, out: RedTeamer) -> None:
    """Send one message from the page on a passage of its own until it is answered (module docstring, 4)."""
    user = setup["users"][2 + index]
    client = PageClient(port, setup, user[1])
    context = setup["passages"][2 + index][0]
    token = str(uuid.uuid4())
    barrier.wait()
    while True:
        seen = send_page(client, PROMPT, token, context=context)
        out.statuses.append(seen["status"])
        if seen["status"] == 503:
            retry = float(seen["retry_after"] or 1)
            out.retry_after.append(retry)
            if seen["waiting"] is not None:
                out.waiting.append(seen["waiting"])
            time.sleep(min(retry, MAX_RETRY_WAIT))
            continue
        if seen["done"] is not None:
            out.answered_at = time.perf_counter() - started
            out.finish_reason = seen["done"].get("finish_reason")
            record = seen["done"].get("generation") or {}
            out.generated_s = (record.get("latency_ms") or 0) / 1000
            out.queued_s = ((record.get("extra") or {}).get("queued_ms") or 0) / 1000
        else:
            out.problem = f"{seen['status']}: {seen['body'][:200]}"
        return


def send_page(client: PageClient, prompt: str, client_token: str, *, context) -> dict:
    """``PageClient.send``, also reading a refusal's ``Retry-After`` and the ``waiting`` count its text
    names ("... 3 answers are waiting ...")."""
    fields = {
        "prompt": prompt,
        "client_token": client_token,
        "csrfmiddlewaretoken": client.csrf,
        "context": context,
    }
    headers = {
        **client.headers,
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "text/event-stream",
    }
    result = {"status": 0, "retry_after": None, "waiting": None, "done": None, "body": ""}
    conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=CLIENT_TIMEOUT)
    try:
        conn.request("POST", SEND, body=urllib.parse.urlencode(fields).encode(), headers=headers)
        response = conn.getresponse()
        result["status"] = response.status
        result["retry_after"] = response.getheader("Retry-After")
        if response.status != 200 or "event-stream" not in (response.getheader("Content-Type") or ""):
            result["body"] = response.read().decode("utf-8", "replace")
            found = re.search(r"(\d+) (?:answers?|requests?) (?:are |is )?waiting", result["body"])
            result["waiting"] = int(found.group(1)) if found else None
            return result
        name, data = None, []
        while line := response.readline():
            line = line.decode("utf-8").rstrip("\r\n")
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line == "" and name:
                if name == "done":
                    result["done"] = json.loads("\n".join(data)) if data else {}
                name, data = None, []
    except (OSError, http.client.HTTPException, ValueError) as exc:
        result["status"], result["body"] = 0, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return result


def line(name: str, probes: list[Probe]) -> str:
    values = [p.seconds * 1000 for p in probes]
    if not values:
        return f"{name:>18}: none"
    statuses = dict(Counter(p.status for p in probes))
    slow = sum(1 for v in values if v >= 1000)
    return (
        f"{name:>18}: p50 {percentile(values, 50):7.0f} ms, p95 {percentile(values, 95):7.0f} ms, "
        f"max {max(values):7.0f} ms; {slow} of {len(values)} took 1 s or more (statuses {statuses})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--generations", type=int, default=20, help="red-teamers at once (default 20)")
    parser.add_argument("--tokens", type=int, default=96, help="the target's max_new_tokens (default 96)")
    parser.add_argument("--probes", type=int, default=20, help="idle rounds of the three GETs (default 20)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between probe rounds")
    parser.add_argument("--port", type=int, default=8540)
    parser.add_argument("--server-workers", type=int, help="demo_server --workers (default: its own)")
    parser.add_argument(
        "--queue", type=int, help="DYNABENCH_GENERATION_QUEUE of the server (default: its own)"
    )
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's output")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="dynabench-generation-queue-"))
    try:
        run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args, workdir: Path) -> None:
    env = demo_environment(workdir)
    env.pop("DYNABENCH_GENERATION_QUEUE", None)
    if args.queue is not None:
        env["DYNABENCH_GENERATION_QUEUE"] = str(args.queue)
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    for command in (["migrate"], ["collectstatic"]):
        subprocess.run(
            [sys.executable, "manage.py", *command, "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
        )
    import django

    django.setup()
    from django.db import connections

    setup = set_up(
        SimpleNamespace(clients=args.generations, passages=args.generations + 2, tokens=args.tokens), workdir
    )
    connections.close_all()
    log_path = workdir / "server.log"
    server, warm = serve_warmed(args, setup, env, log_path)
    try:
        # The probing user: signed in, with an open conversation of one turn (the warm-up's).
        headers = warm.headers
        time.sleep(2)
        load_idle = loads()
        started = time.perf_counter()
        count = iter(range(args.probes))
        idle = probe_rounds(args.port, headers, args.interval, lambda: next(count, None) is not None, started)
        load_before = loads()
        barrier = threading.Barrier(args.generations + 1)
        teamers = [RedTeamer() for _ in range(args.generations)]
        started = time.perf_counter()
        threads = [
            threading.Thread(target=red_teamer, args=(args.port, setup, i, barrier, started, teamers[i]))
            for i in range(args.generations)
        ]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        time.sleep(0.5)  # the sends reach the server first
        queued = probe_rounds(
            args.port, headers, args.interval, lambda: any(t.is_alive() for t in threads), started
        )
        all_answered = max(t.answered_at or 0.0 for t in teamers)
        load_after = loads()
    finally:
        stop(server)
    server_log = log_path.read_text(encoding="utf-8", errors="replace")
    if args.server_log:
        args.server_log.write_text(server_log, encoding="utf-8")
    from annotation.models import Turn

    stored = Counter(
        Turn.objects.exclude(conversation__annotator_id__in=[u[0] for u in setup["users"][:2]]).values_list(
            "status", flat=True
        )
    )
    connections.close_all()

    workers = args.server_workers or "8 (its default)"
    bound = re.search(r"at most (\d+) waiting", server_log)
    print(
        f"manage.py demo_server, request threads {workers}, line bound {bound.group(1) if bound else '?'}"
        f" (DYNABENCH_GENERATION_QUEUE {args.queue if args.queue is not None else 'unset'}), SQLite, {os.cpu_count()} cores; SmolLM2-135M-Instruct "
        f"greedy, max_new_tokens {args.tokens}; {args.generations} red-teamers at once from the page"
    )
    print(f"\nidle ({args.probes} rounds; load average {load_idle} before, {load_before} after, 1/5/15 min):")
    for name in ("/health/", "/accounts/login/", "red-teaming page"):
        print(line(name, [p for p in idle if p.path == name]))
    print(
        f"\nwhile the generations queue ({all_answered:.1f} s until the last answer ended; load average "
        f"after {load_after}):"
    )
    for name in ("/health/", "/accounts/login/", "red-teaming page"):
        print(line(name, [p for p in queued if p.path == name]))
    sends = Counter(s for t in teamers for s in t.statuses)
    refused = [r for t in teamers for r in t.retry_after]
    waiting = [w for t in teamers for w in t.waiting]
    answered = [t.answered_at for t in teamers if t.answered_at is not None]
    print(
        f"\nred-teamers: answered {len(answered)} of {args.generations}; sends {dict(sends)}; "
        f"finish reasons {dict(Counter(t.finish_reason for t in teamers if t.finish_reason))}"
    )
    if refused:
        print(
            f"503s: {len(refused)}, Retry-After min {min(refused):.0f} / median "
            f"{percentile(refused, 50):.0f} / max {max(refused):.0f} s; waiting said "
            f"{dict(sorted(Counter(waiting).items()))}"
        )
    if answered:
        print(
            f"answer ended after: p50 {percentile(answered, 50):.1f} s, p95 {percentile(answered, 95):.1f} s, "
            f"max {max(answered):.1f} s"
        )
    records = [t for t in teamers if t.generated_s is not None]
    if records:
        holds = [t.generated_s - t.queued_s for t in records]
        print(
            f"server's record per answer: in line p50 {percentile([t.queued_s for t in records], 50):.1f} s, "
            f"generating (runner start to end, less the wait) p50 {percentile(holds, 50):.1f} s, "
            f"max {max(holds):.1f} s"
        )
    for t in teamers:
        if t.problem:
            print(f"  problem: {t.problem}")
    print(f"turns stored: {dict(stored)} (the red-teamers' only; one per red-teamer expected)")
    fives = Counter(re.findall(r'" (5\d\d) \d+', server_log))
    print(f"server log: 5xx responses {dict(fives)}, tracebacks {server_log.count('Traceback')}")


if __name__ == "__main__":
    main()
