"""Load on the production profile: annotators writing examples and validators voting at the same time.

Run:  .venv/bin/python benchmarks/load_production.py [--annotators 50] [--validators 20] [--seconds 60]
                                                     [--think 2.0] [--web-workers N] [--training]
                                                     [--ramp 10] [--server-log FILE] [--crowds 200,300,400]

What it does, all on loopback:
  1. creates the database ``dynabench_load`` (dropped first if it is there) and migrates it; sets up the
     hate-speech task with round 1, whose target is ``benchmarks.minilm_model``'s all-MiniLM-L6-v2 with a
     fitted head, registered (and so exported to ONNX and put on the runtime its check allows) as a
     trained target is; one API token per annotator and validator, and 100 examples for validators to
     start on. With ``--training``, HatemojiBuild is imported as rounds 1-3 (``import_hatemoji_build``,
     as the demo does) and the crowd writes in round 4;
  2. measures the bare batched forward (``predict_batch`` in batches of 32, this process, before the
     server starts) in examples per second, on the target's runtime and on torch;
  3. starts ``scripts/serve.sh`` (gunicorn with ``--web-workers`` workers, default the profile's
     two per core, django-q2 on Redis database
     13, PostgreSQL) and waits for /health/;
  4. for ``--ramp`` seconds (ramp-up: counted in every integrity check and printed apart, left out of
     the latency figures) and then ``--seconds``, each annotator thread POSTs examples (statements of HatemojiBuild's test split)
     to ``/api/tasks/hate-speech/examples/`` with its own token and a fresh ``Idempotency-Key``, retried
     with the same key (at most 3 tries) on a network error or a 5xx, and waits an exponential
     ``--think`` seconds (mean) between examples; each validator thread asks for the next example and
     votes on it. ``--think 0`` is a closed loop: every client sends again as soon as it is answered.
     With ``--training``, a finetune training job (``recipe=finetune``, 20 epochs, on round 1) is queued on
     the job cluster before the warm-up, and another if one ends, so that one runs throughout;
  5. reads every example and vote back from the database and prints latency p50/p95/max per request
     kind, examples per second, status counts, requests with no answer, and the integrity counts: lost
     (acknowledged but not stored), duplicated (stored twice for one key), double-counted votes, 5xx;
     with ``--training``, the share of the load window a training job was running, and the jobs; and
     whether the aim was met: p95 under 300 ms for create, next and vote, max under 1 s, every request
     answered, nothing lost or counted twice.
  ``--crowds 200,300,400`` sweeps instead: one run of ``--seconds`` per crowd (annotators, and a tenth as
  many validators, clients of their own each time) on the same server, a line each, up to the first
  that misses the aim; it prints the largest crowd that met it.
The client threads run on the same 2 cores as the server, so the figures are a floor.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.minilm_model import register_fitted_minilm  # noqa: E402

DB_NAME = "dynabench_load"
REDIS_URL = "redis://127.0.0.1:6379/13"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def load_statements(data_dir: Path) -> list[str]:
    with open(data_dir / "hatemoji_build" / "test.csv", encoding="utf-8-sig", newline="") as handle:
        return [row["text"] for row in csv.DictReader(handle) if row["text"].strip()]


def request(method: str, url: str, token: str, body: dict | None = None, key: str | None = None, timeout=30):
    """(status, parsed body or None); status 0 when no answer came (refused, reset, timed out)."""
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if key:
        headers["Idempotency-Key"] = key
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:  # noqa: S310 - loopback only
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None
    except (OSError, ValueError):
        return 0, None


class Recorder:
    """What the clients saw: latencies (ms) per request kind of the requests that ended ``ramp`` seconds
    or more after the recorder was made, status counts, what was acknowledged, and ``timeline``:
    (kind, seconds since the recorder was made when the request ended, ms) of every request, the ramp's
    included. Status counts, answers and acknowledgements count every request."""

    def __init__(self, ramp: float = 0.0):
        self.started = time.perf_counter()
        self.ramp = ramp
        self.timeline: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.statuses: Counter = Counter()
        self.acknowledged: list[tuple[int, str, int]] = []  # (annotator id, key, example id)
        self.votes: list[tuple[int, int]] = []  # (validator id, example id) answered 201
        self.unanswered = 0
        self.retries = 0

    def record(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            at = time.perf_counter() - self.started
            self.timeline.append((kind, at, seconds * 1000))
            if at >= self.ramp:
                self.latencies.setdefault(kind, []).append(seconds * 1000)
            self.statuses[(kind, status)] += 1
            if status == 0:
                self.unanswered += 1


def first_wait(stop: threading.Event, think: float, rng: random.Random) -> None:
    """A client's wait before its first request: an exponential ``think`` (mean, seconds), as between
    requests, so that a crowd arrives spread out as people do (none when ``think`` is 0, the closed loop).

    Without it every client sent its first request in the same instant: 200 annotators made a burst of
    200 requests in the first 50 ms, answered over the next seconds, which was the 4-6 s tail this
    benchmark printed (docs/serving.md, "Where the time went")."""
    if think:
        stop.wait(rng.expovariate(1 / think))


def annotator_loop(base, user_id, token, statements, stop, think, rec: Recorder, rng):
    first_wait(stop, think, rng)
    while not stop.is_set():
        key = str(uuid.uuid4())
        body = {"statement": rng.choice(statements), "label": rng.choice(["hateful", "not-hateful"])}
        for attempt in range(3):
            started = time.perf_counter()
            status, answer = request("POST", f"{base}/api/tasks/hate-speech/examples/", token, body, key)
            rec.record("create", status, time.perf_counter() - started)
            if status == 201 and answer:
                with rec.lock:
                    rec.acknowledged.append((user_id, key, answer["id"]))
                break
            if status not in (0, 409) and status < 500:
                break
            with rec.lock:
                rec.retries += 1
            time.sleep(0.2 * (attempt + 1))
        if think:
            stop.wait(rng.expovariate(1 / think))


def validator_loop(base, user_id, token, stop, think, rec: Recorder, rng):
    first_wait(stop, think, rng)
    while not stop.is_set():
        started = time.perf_counter()
        status, answer = request("GET", f"{base}/api/tasks/hate-speech/validations/next/", token)
        rec.record("next", status, time.perf_counter() - started)
        example = (answer or {}).get("example") if status == 200 else None
        if not example:
            stop.wait(0.5)
            continue
        verdict = rng.choice(["correct", "correct", "incorrect"])
        started = time.perf_counter()
        status, answer = request(
            "POST",
            f"{base}/api/examples/{example['id']}/validations/",
            token,
            {"verdict": verdict},
            key=str(uuid.uuid4()),
        )
        rec.record("vote", status, time.perf_counter() - started)
        if status == 201:
            with rec.lock:
                rec.votes.append((user_id, example["id"]))
        if think:
            stop.wait(rng.expovariate(1 / think))


def psql(*sql: str) -> None:
    for statement in sql:
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", statement], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--validators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=2.0, help="mean seconds between a client's requests")
    parser.add_argument(
        "--ramp",
        type=float,
        default=10.0,
        help="seconds of load before the measured --seconds; its requests are counted apart",
    )
    parser.add_argument(
        "--web-workers", type=int, default=2 * len(os.sched_getaffinity(0)), help="default: the profile's"
    )
    parser.add_argument("--port", type=int, default=8200)
    parser.add_argument("--server-log", type=Path, help="keep the server's output (access log with times)")
    parser.add_argument(
        "--training", action="store_true", help="keep a finetune training job running on the cluster"
    )
    parser.add_argument(
        "--crowds",
        type=lambda text: [int(n) for n in text.split(",")],
        help="a sweep: comma-separated annotator counts (a tenth as many validators), e.g. 200,300,400",
    )
    args = parser.parse_args()
    if args.crowds:
        args.annotators = sum(args.crowds)
        args.validators = sum(max(1, n // 10) for n in args.crowds)

    env, setup = prepare_profile(
        annotators=args.annotators,
        validators=args.validators,
        port=args.port,
        web_workers=args.web_workers,
        training=args.training,
    )
    bare = bare_batched_forward(setup["model_dir"], setup["statements"], runtime=setup["runtime"])
    setup["bare_torch"] = bare_batched_forward(setup["model_dir"], setup["statements"])
    from django.db import connections

    connections.close_all()

    server = start_profile(env, args.server_log)
    base = f"http://127.0.0.1:{args.port}"
    trainer = Trainer(setup["task_id"]) if args.training else None
    try:
        wait_healthy(base)
        if trainer:
            trainer.start()
            trainer.wait_running()
        warm_up(base, setup, args.web_workers)
        if trainer:
            trainer.window_opened()
        if args.crowds:
            sweep(args, base, setup)
        else:
            rec = run_load(args, base, setup)
        if trainer:
            trainer.window_closed()
    finally:
        if trainer:
            trainer.stop.set()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    if not args.crowds:
        report(args, setup, rec, bare)
    if trainer:
        trainer.join(timeout=10)
        trainer.report()
    connections.close_all()
    psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def prepare_profile(
    *,
    annotators: int,
    validators: int,
    port: int,
    web_workers: int,
    extra: dict | None = None,
    training: bool = False,
) -> tuple[dict, dict]:
    """Create and migrate ``dynabench_load``, set Django up in this process on it, and lay out the task
    (``set_up``). Returns (the environment for ``scripts/serve.sh``, what ``set_up`` returns)."""
    psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)", f"CREATE DATABASE {DB_NAME}")
    workdir = Path(tempfile.mkdtemp(prefix="dynabench-load-"))
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(40),
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "DYNABENCH_VAR_DIR": str(workdir / "var"),
        "DYNABENCH_MODEL_DIR": str(workdir / "models"),
        "DYNABENCH_PORT": str(port),
        "DYNABENCH_WEB_WORKERS": str(web_workers),
        "DYNABENCH_JOB_WORKERS": "1",
        # The load is the point: a client may write as fast as it is answered.
        "DYNABENCH_CREATE_RATE": "100000/min",
        "HF_HUB_OFFLINE": "1",
        "DJANGO_SETTINGS_MODULE": "dynabench.settings",
        **(extra or {}),
    }
    os.environ.update(env)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    redis_flush()

    import django

    django.setup()
    return env, set_up(annotators, validators, workdir, training=training)


def start_profile(env: dict, log: Path | None = None) -> subprocess.Popen:
    """``scripts/serve.sh`` with ``env``, in a session of its own (stopped with ``os.killpg``); its output
    (gunicorn's access log with each request's server-side time in microseconds, the job cluster's
    start) goes to ``log``, or nowhere."""
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    env = {**env, "GUNICORN_CMD_ARGS": '--access-logformat "%(m)s %(U)s %(s)s %(D)s"'} if log else env
    return subprocess.Popen(
        ["bash", "scripts/serve.sh"],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def redis_flush() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


def set_up(n_annotators: int, n_validators: int, workdir: Path, training: bool = False) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.services import create_example
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    statements = load_statements(Path(settings.DYNABENCH_DATA_DIR))
    task = ensure_builtin_task("hate-speech")
    if training:
        # HatemojiBuild's rounds as rounds 1-3, as the demo imports them: round 1 is what the job trains on.
        from annotation.importers import import_hatemoji_build

        import_hatemoji_build(task=task, data_dir=Path(settings.DYNABENCH_DATA_DIR) / "hatemoji_build")
    round_ = ensure_round(task=task, number=4 if training else 1)
    set_current_round(task=task, round_=round_)
    model_dir = workdir / "models" / "load-minilm"
    model = register_fitted_minilm(task, "load-minilm", model_dir, Path(settings.DYNABENCH_DATA_DIR))
    set_round_targets(round=round_, models=[model])
    User = get_user_model()
    annotators = []
    for n in range(n_annotators):
        user = User.objects.create_user(f"load-annotator-{n}")
        annotators.append((user.pk, Token.objects.create(user=user).key))
    validators = []
    for n in range(n_validators):
        user = User.objects.create_user(f"load-validator-{n}")
        validators.append((user.pk, Token.objects.create(user=user).key))
    seeder = User.objects.create_user("load-seeder")
    warm_up_token = Token.objects.create(user=User.objects.create_user("load-warm-up")).key
    for text in statements[:100]:
        create_example(task=task, annotator=seeder, inputs={"statement": text}, target="hateful")
    return {
        "task_id": task.pk,
        "statements": statements,
        "annotators": annotators,
        "validators": validators,
        "model_dir": model_dir,
        "runtime": model.runtime,
        "runtime_message": model.card.get("runtime", {}).get("message", ""),
        "round_id": round_.pk,
        "seeder": seeder.pk,
        "warm_up_token": warm_up_token,
    }


class Trainer(threading.Thread):
    """Keeps one finetune training job (``epochs`` epochs on round 1, HatemojiBuild's source round 5: about
    a minute each on a busy 2-core machine, so that one job outlasts a run) queued or running on the job cluster until
    ``stop`` is set, and notes when each ran. Reads the jobs' rows from the database every 0.5 s."""

    def __init__(self, task_id: int, epochs: int = 20):
        super().__init__(daemon=True)
        self.task_id = task_id
        self.epochs = epochs
        self.stop = threading.Event()
        self.jobs: list[int] = []
        self.running_since: float | None = None
        self.running_seconds = 0.0  # within the load window
        self.window: list[float] = []
        self.first_running = threading.Event()

    def run(self) -> None:
        from django.db import connection

        from cycle.models import TrainingJob
        from cycle.training.requests import request_training
        from tasks.models import Task

        task = Task.objects.get(pk=self.task_id)
        try:
            while not self.stop.is_set():
                job = request_training(
                    task=task,
                    rounds=[1],
                    recipe="finetune",
                    epochs=self.epochs,
                    name=f"load-finetune-{len(self.jobs)}",
                )
                self.jobs.append(job.pk)
                while not self.stop.wait(0.5):
                    status = TrainingJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()
                    self._note(status == TrainingJob.Status.RUNNING)
                    if status in (TrainingJob.Status.DONE, TrainingJob.Status.FAILED):
                        break
        finally:
            self._note(False)
            connection.close()

    def _note(self, running: bool) -> None:
        now = time.perf_counter()
        if running:
            self.first_running.set()
            if self.running_since is None:
                self.running_since = now
        elif self.running_since is not None:
            self._count(self.running_since, now)
            self.running_since = None

    def _count(self, start: float, end: float) -> None:
        if len(self.window) == 2:
            lo, hi = self.window
            self.running_seconds += max(0.0, min(end, hi) - max(start, lo))

    def wait_running(self, seconds: float = 300) -> None:
        if not self.first_running.wait(seconds):
            raise SystemExit("no training job started on the cluster")

    def window_opened(self) -> None:
        self.window = [time.perf_counter()]

    def window_closed(self) -> None:
        self.window.append(time.perf_counter())
        if self.running_since is not None:
            self._count(self.running_since, self.window[1])
            self.running_since = self.window[1]

    def report(self) -> None:
        from cycle.models import TrainingJob

        lo, hi = self.window
        print(
            f"training: a finetune job ran {self.running_seconds:.1f} s of the {hi - lo:.1f} s window "
            f"({100 * self.running_seconds / (hi - lo):.0f}%)"
        )
        for job in TrainingJob.objects.filter(pk__in=self.jobs).order_by("pk"):
            print(f"  job {job.name}: {job.status} {job.progress[:100]}")


def bare_batched_forward(
    model_dir: Path, statements: list[str], seconds: float = 8.0, runtime: str = "torch"
) -> float:
    """Examples/s of ``predict_batch`` in batches of 32 on ``runtime``, alone in this process, with the
    ONNX vector cache off (the loop comes back to the same statements, which the cache would answer)."""
    from engine.runtime import vector_cache
    from engine.runtime.classifier import get_classifier

    classifier = get_classifier(model_dir, runtime=runtime)
    with vector_cache.uncached():
        classifier.predict_batch(statements[:32])
        done, started, i = 0, time.perf_counter(), 0
        while time.perf_counter() - started < seconds:
            batch = [statements[(i + k) % len(statements)] for k in range(32)]
            classifier.predict_batch(batch)
            done += len(batch)
            i += 32
    return done / (time.perf_counter() - started)


def wait_healthy(base: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health/?format=json", timeout=5) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("the profile did not become healthy")


def warm_up(base: str, setup: dict, workers: int, seconds: float = 120) -> None:
    """Write examples as a user outside the counts until every gunicorn worker answers fast (each loads
    torch and the target once, in the background, when it starts): 4 x ``workers`` concurrent writes in
    a row all under 1 s, or ``seconds`` passed."""
    token = setup["warm_up_token"]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        times: list[float] = []

        def one(times: list[float] = times) -> None:
            started = time.perf_counter()
            request(
                "POST",
                f"{base}/api/tasks/hate-speech/examples/",
                token,
                {"statement": "warm up", "label": "hateful"},
            )
            times.append(time.perf_counter() - started)

        threads = [threading.Thread(target=one) for _ in range(4 * workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if max(times) < 1.0:
            return
    print(f"warning: workers still slow after {seconds:.0f} s of warm-up")


def process_cpu() -> dict[str, float]:
    """CPU seconds (user + system) used so far by the web (gunicorn's processes), the job cluster
    (``manage.py qcluster``'s processes), PostgreSQL (every process of user ``postgres``, other
    databases' too) and this client, read from ``/proc``; a process that ended is not counted."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"web": 0.0, "jobs": 0.0, "postgres": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            owner = (entry / "status").read_text().split("\nUid:")[1].split()[0]
        except (OSError, IndexError):
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        if b"gunicorn" in cmdline:
            out["web"] += seconds
        elif b"qcluster" in cmdline:
            out["jobs"] += seconds
        elif cmdline.startswith(b"postgres") and owner != "0":
            out["postgres"] += seconds
    times = os.times()
    out["client"] = times.user + times.system
    return out


def run_load(args, base: str, setup: dict, annotators=None, validators=None) -> Recorder:
    """``getattr(args, "ramp", 0)`` seconds of ramp-up, then ``args.seconds`` of load, from
    ``annotators`` and ``validators`` ((user id, token) pairs; default all of ``setup``'s), thinking
    ``args.think`` seconds (mean) between requests. The latencies are those of the requests that ended
    after the ramp (``Recorder``)."""
    annotators = setup["annotators"] if annotators is None else annotators
    validators = setup["validators"] if validators is None else validators
    ramp = float(getattr(args, "ramp", 0) or 0)
    rec = Recorder(ramp=ramp)
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=annotator_loop,
            args=(base, uid, token, setup["statements"], stop, args.think, rec, random.Random(uid)),
            daemon=True,
        )
        for uid, token in annotators
    ] + [
        threading.Thread(
            target=validator_loop,
            args=(base, uid, token, stop, args.think, rec, random.Random(uid)),
            daemon=True,
        )
        for uid, token in validators
    ]
    cpu_before = process_cpu()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(ramp + args.seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    rec.elapsed = time.perf_counter() - started
    rec.cpu = {k: v - cpu_before[k] for k, v in process_cpu().items()}
    return rec


AIM_P95_MS = 300.0
AIM_MAX_MS = 1000.0


def summarise(rec: Recorder, annotator_ids: list[int], validator_ids: list[int]) -> dict:
    """Latency percentiles (ms) per request kind and the integrity counts of one run, read back from the
    database for these clients: ``lost`` (acknowledged, not stored), ``duplicated`` (one key stored
    twice), ``unacknowledged`` (stored, never acknowledged: a retried request whose first answer was
    lost), ``votes_lost``, ``double_votes``, ``fives`` (5xx answers), ``created``, and ``aim``: p95 under
    AIM_P95_MS for create, next and vote, max under AIM_MAX_MS, every request answered, nothing lost."""
    from django.db.models import Count

    from annotation.models import Example
    from validation.models import Validation

    stored = set(Example.objects.filter(annotator_id__in=annotator_ids).values_list("pk", flat=True))
    acknowledged_ids = [example_id for _, _, example_id in rec.acknowledged]
    votes = Validation.objects.filter(validator_id__in=validator_ids)
    out = {
        "lost": len(set(acknowledged_ids) - stored),
        "duplicated": len(acknowledged_ids) - len(set(acknowledged_ids)),
        "unacknowledged": len(stored - set(acknowledged_ids)),
        "double_votes": sum(
            row["n"] - 1
            for row in votes.values("example_id", "validator_id").annotate(n=Count("id")).filter(n__gt=1)
        ),
        "votes_lost": len(set(rec.votes) - set(votes.values_list("validator_id", "example_id"))),
        "fives": sum(n for (kind, status), n in rec.statuses.items() if status >= 500),
        "created": len(set(acknowledged_ids)),
        "latency": {},
    }
    every: list[float] = []
    for kind in ("create", "next", "vote"):
        values = rec.latencies.get(kind, [])
        every += values
        out["latency"][kind] = (
            len(values),
            percentile(values, 50),
            percentile(values, 95),
            max(values, default=float("nan")),
        )
    out["latency"]["all"] = (
        len(every),
        percentile(every, 50),
        percentile(every, 95),
        max(every, default=0.0),
    )
    out["aim"] = (
        all(out["latency"][kind][2] < AIM_P95_MS for kind in ("create", "next", "vote"))
        and out["latency"]["all"][3] < AIM_MAX_MS
        and rec.unanswered == 0
        and not any(out[k] for k in ("lost", "duplicated", "votes_lost", "double_votes", "fives"))
    )
    return out


def longest_at(rec: Recorder) -> float:
    """When the longest request after the ramp ended, in seconds since the clients started."""
    after = [t for t in rec.timeline if t[1] >= rec.ramp]
    return max(after, key=lambda t: t[2])[1] if after else 0.0


def ramp_line(rec: Recorder) -> str:
    """p95 and max (ms) of the requests that ended during the ramp, which the figures leave out."""
    during = [ms for _, at, ms in rec.timeline if at < rec.ramp]
    return (
        f"ramp-up ({rec.ramp:g} s, not in the figures above): {len(during)} requests, "
        f"p95 {percentile(during, 95):.0f} ms, max {max(during, default=0):.0f} ms"
    )


def report(args, setup: dict, rec: Recorder, bare: float) -> None:
    annotator_ids = [uid for uid, _ in setup["annotators"]]
    validator_ids = [uid for uid, _ in setup["validators"]]
    summary = summarise(rec, annotator_ids, validator_ids)
    created = summary["created"]

    print(
        f"profile: gunicorn {args.web_workers} workers x {os.environ.get('DYNABENCH_WEB_THREADS') or 4} "
        f"threads, django-q2 on Redis, PostgreSQL; {os.cpu_count()} cores"
    )
    print(
        f"clients: {len(annotator_ids)} annotators, {len(validator_ids)} validators, {rec.elapsed:.1f} s, "
        f"think time {args.think:g} s (mean, exponential)"
    )
    print(f"{'request':10}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for kind in ("create", "next", "vote", "all"):
        n, p50, p95, top = summary["latency"][kind]
        print(f"{kind:10}{n:7d}{p50:10.0f}{p95:10.0f}{top:10.0f}")
    if rec.ramp:
        print(ramp_line(rec))
    windows: dict[int, list[float]] = {}
    for _, at, ms in rec.timeline:
        windows.setdefault(int(at // 10), []).append(ms)
    print(
        "p95 ms per 10 s of the run: "
        + ", ".join(f"{10 * w}-{10 * w + 10} s: {percentile(v, 95):.0f}" for w, v in sorted(windows.items()))
    )
    print(f"examples stored: {created} in {rec.elapsed:.1f} s = {created / rec.elapsed:.1f} examples/s")
    requests = max(1, summary["latency"]["all"][0])
    print(
        "CPU over the run (cores busy, of "
        + f"{len(os.sched_getaffinity(0))}): "
        + ", ".join(f"{k} {v / rec.elapsed:.2f}" for k, v in rec.cpu.items())
        + "; per request (ms): "
        + ", ".join(f"{k} {1000 * v / requests:.1f}" for k, v in rec.cpu.items())
    )
    print(f"target runtime: {setup['runtime']} {setup['runtime_message']}")
    print(
        f"bare batched forward on {setup['runtime']} (batches of 32, same machine, alone): {bare:.1f} examples/s "
        f"(on torch: {setup['bare_torch']:.1f})"
    )
    print(f"ratio: {created / rec.elapsed / bare:.2f}x the bare batched forward")
    print(
        "status counts: "
        + ", ".join(f"{kind} {status}: {n}" for (kind, status), n in sorted(rec.statuses.items()))
    )
    print(
        f"votes acknowledged: {len(rec.votes)}, retries: {rec.retries}, requests with no answer: {rec.unanswered}"
    )
    print(
        f"integrity: lost {summary['lost']}, duplicated {summary['duplicated']}, stored but not acknowledged "
        f"{summary['unacknowledged']}, votes lost {summary['votes_lost']}, double-counted votes "
        f"{summary['double_votes']}, 5xx {summary['fives']}"
    )
    print(
        f"aim (p95 < {AIM_P95_MS:.0f} ms for create, next and vote, max < {AIM_MAX_MS:.0f} ms, nothing lost): "
        + ("met" if summary["aim"] else "NOT met")
    )


def sweep(args, base: str, setup: dict) -> None:
    """One load run per crowd of ``args.crowds`` (annotators; a tenth as many validators), each with
    clients of its own, 10 s apart, on the same server; prints a line per crowd (p95 per request kind,
    the longest request and when it ended, in seconds into the run) and the largest crowd that met the
    aim (every smaller one meeting it too)."""
    print(
        f"sweep: {args.seconds:g} s per crowd, think time {args.think:g} s (mean, exponential); aim: p95 < "
        f"{AIM_P95_MS:.0f} ms for create, next and vote, max < {AIM_MAX_MS:.0f} ms, nothing lost"
    )
    print(
        f"{'annotators':>10}{'validators':>11}{'create p95':>11}{'next p95':>9}{'vote p95':>9}{'max ms':>8}"
        f"{'at s':>6}{'ex/s':>7}{'no answer':>10}{'lost':>5}{'5xx':>5}  aim"
    )
    a_at = v_at = 0
    largest = None
    for n in args.crowds:
        m = max(1, n // 10)
        annotators = setup["annotators"][a_at : a_at + n]
        validators = setup["validators"][v_at : v_at + m]
        a_at, v_at = a_at + n, v_at + m
        rec = run_load(args, base, setup, annotators=annotators, validators=validators)
        summary = summarise(rec, [u for u, _ in annotators], [u for u, _ in validators])
        lat = summary["latency"]
        lost = summary["lost"] + summary["votes_lost"] + summary["duplicated"] + summary["double_votes"]
        print(
            f"{n:10d}{m:11d}{lat['create'][2]:11.0f}{lat['next'][2]:9.0f}{lat['vote'][2]:9.0f}"
            f"{lat['all'][3]:8.0f}{longest_at(rec):6.0f}"
            f"{summary['created'] / rec.elapsed:7.1f}{rec.unanswered:10d}{lost:5d}"
            f"{summary['fives']:5d}  {'met' if summary['aim'] else 'NOT met'}",
            flush=True,
        )
        if rec.ramp:
            print(f"{'':10} {ramp_line(rec)}", flush=True)
        if not summary["aim"]:
            break
        largest = (n, m)
        time.sleep(10)
    if largest:
        print(f"largest crowd under the aim: {largest[0]} annotators and {largest[1]} validators")
    else:
        print(f"largest crowd under the aim: none of {args.crowds}")


if __name__ == "__main__":
    main()
