"""Load on the production profile: annotators writing examples and validators voting at the same time.

Run:  .venv/bin/python benchmarks/load_production.py [--annotators 50] [--validators 20] [--seconds 60]
                                                     [--think 2.0] [--web-workers 2]

What it does, all on loopback:
  1. creates the database ``dynabench_load`` (dropped first if it is there) and migrates it; sets up the
     hate-speech task with round 1, whose target is ``benchmarks.minilm_model``'s all-MiniLM-L6-v2 with a
     fitted head, registered (and so exported to ONNX and put on the runtime its check allows) as a
     trained target is; one API token per annotator and validator, and 100 examples for validators to
     start on;
  2. measures the bare batched forward (``predict_batch`` in batches of 32, this process, before the
     server starts) in examples per second, on the target's runtime and on torch;
  3. starts ``scripts/serve.sh`` (gunicorn with ``--web-workers`` workers, django-q2 on Redis database
     13, PostgreSQL) and waits for /health/;
  4. for ``--seconds``, each annotator thread POSTs examples (statements of HatemojiBuild's test split)
     to ``/api/tasks/hate-speech/examples/`` with its own token and a fresh ``Idempotency-Key``, retried
     with the same key (at most 3 tries) on a network error or a 5xx, and waits an exponential
     ``--think`` seconds (mean) between examples; each validator thread asks for the next example and
     votes on it. ``--think 0`` is a closed loop: every client sends again as soon as it is answered;
  5. reads every example and vote back from the database and prints latency p50/p95/max per request
     kind, examples per second, status counts, requests with no answer, and the integrity counts: lost
     (acknowledged but not stored), duplicated (stored twice for one key), double-counted votes, 5xx.
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
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.statuses: Counter = Counter()
        self.acknowledged: list[tuple[int, str, int]] = []  # (annotator id, key, example id)
        self.votes: list[tuple[int, int]] = []  # (validator id, example id) answered 201
        self.unanswered = 0
        self.retries = 0

    def record(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds * 1000)
            self.statuses[(kind, status)] += 1
            if status == 0:
                self.unanswered += 1


def annotator_loop(base, user_id, token, statements, stop, think, rec: Recorder, rng):
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
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=8200)
    args = parser.parse_args()

    env, setup = prepare_profile(
        annotators=args.annotators, validators=args.validators, port=args.port, web_workers=args.web_workers
    )
    bare = bare_batched_forward(setup["model_dir"], setup["statements"], runtime=setup["runtime"])
    setup["bare_torch"] = bare_batched_forward(setup["model_dir"], setup["statements"])
    from django.db import connections

    connections.close_all()

    server = start_profile(env)
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_healthy(base)
        warm_up(base, setup, args.web_workers)
        rec = run_load(args, base, setup)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    report(args, setup, rec, bare)
    connections.close_all()
    psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def prepare_profile(
    *, annotators: int, validators: int, port: int, web_workers: int, extra: dict | None = None
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
    return env, set_up(annotators, validators, workdir)


def start_profile(env: dict) -> subprocess.Popen:
    """``scripts/serve.sh`` with ``env``, in a session of its own (stopped with ``os.killpg``), quiet."""
    return subprocess.Popen(
        ["bash", "scripts/serve.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def redis_flush() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


def set_up(n_annotators: int, n_validators: int, workdir: Path) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.services import create_example
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    statements = load_statements(Path(settings.DYNABENCH_DATA_DIR))
    task = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=task, number=1)
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


def bare_batched_forward(
    model_dir: Path, statements: list[str], seconds: float = 8.0, runtime: str = "torch"
) -> float:
    """Examples/s of ``predict_batch`` in batches of 32 on ``runtime``, alone in this process, with the
    ONNX vector cache off (the loop comes back to the same statements, which the cache would answer)."""
    from models_registry.runtime import vector_cache
    from models_registry.runtime.classifier import get_classifier

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


def run_load(args, base: str, setup: dict) -> Recorder:
    rec = Recorder()
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=annotator_loop,
            args=(base, uid, token, setup["statements"], stop, args.think, rec, random.Random(uid)),
            daemon=True,
        )
        for uid, token in setup["annotators"]
    ] + [
        threading.Thread(
            target=validator_loop,
            args=(base, uid, token, stop, args.think, rec, random.Random(uid)),
            daemon=True,
        )
        for uid, token in setup["validators"]
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(args.seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    rec.elapsed = time.perf_counter() - started
    return rec


def report(args, setup: dict, rec: Recorder, bare: float) -> None:
    from django.db.models import Count

    from annotation.models import Example
    from validation.models import Validation

    annotator_ids = [uid for uid, _ in setup["annotators"]]
    validator_ids = [uid for uid, _ in setup["validators"]]
    stored = set(Example.objects.filter(annotator_id__in=annotator_ids).values_list("pk", flat=True))
    acknowledged_ids = [example_id for _, _, example_id in rec.acknowledged]
    lost = len(set(acknowledged_ids) - stored)
    duplicated_keys = len(acknowledged_ids) - len(set(acknowledged_ids))
    unacknowledged_stored = len(stored - set(acknowledged_ids))
    votes = Validation.objects.filter(validator_id__in=validator_ids)
    double_votes = sum(
        row["n"] - 1
        for row in votes.values("example_id", "validator_id").annotate(n=Count("id")).filter(n__gt=1)
    )
    vote_pairs = set(votes.values_list("validator_id", "example_id"))
    votes_lost = len(set(rec.votes) - vote_pairs)
    fives = sum(n for (kind, status), n in rec.statuses.items() if status >= 500)
    created = len(set(acknowledged_ids))

    print(
        f"profile: gunicorn {args.web_workers} workers, django-q2 on Redis, PostgreSQL; {os.cpu_count()} cores"
    )
    print(
        f"clients: {args.annotators} annotators, {args.validators} validators, {rec.elapsed:.1f} s, "
        f"think time {args.think:g} s (mean, exponential)"
    )
    print(f"{'request':10}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    every = []
    for kind in ("create", "next", "vote"):
        values = rec.latencies.get(kind, [])
        every += values
        print(
            f"{kind:10}{len(values):7d}{percentile(values, 50):10.0f}{percentile(values, 95):10.0f}"
            f"{max(values, default=float('nan')):10.0f}"
        )
    print(
        f"{'all':10}{len(every):7d}{percentile(every, 50):10.0f}{percentile(every, 95):10.0f}{max(every):10.0f}"
    )
    print(f"examples stored: {created} in {rec.elapsed:.1f} s = {created / rec.elapsed:.1f} examples/s")
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
        f"integrity: lost {lost}, duplicated {duplicated_keys}, stored but not acknowledged "
        f"{unacknowledged_stored}, votes lost {votes_lost}, double-counted votes {double_votes}, 5xx {fives}"
    )


if __name__ == "__main__":
    main()
