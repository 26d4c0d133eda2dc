"""CPU and queries of one crowd request, in one process: a figure that compares across runs and machines.

Run:  .venv/bin/python benchmarks/crowd_request_cpu.py [--requests 300] [--profile create,next,vote]
                                                       [--top 40] [--profile-file FILE]

The load benchmarks (``load_production.py``, ``remote_streams.py``) measure latency on a full machine,
where the spread between runs is as large as most changes. This one measures what a change does to the
work of a request. On ``load_production.py``'s set-up (the database ``dynabench_load``, dropped and made
anew; the hate-speech task's round 1 with the fitted all-MiniLM-L6-v2 target, 100 examples to validate),
in this process, through Django's test client with the API token of each client and the production
profile's settings (``DEBUG=0``):
  - ``--requests`` times each, in turn: an annotator's create (``POST /api/tasks/hate-speech/examples/``
    with a fresh ``Idempotency-Key``), a validator's next example (``GET .../validations/next/``) and
    their vote on it (``POST /api/examples/<id>/validations/``), spread over 50 annotators and 20
    validators as the load benchmark's crowd is;
  - prints, per kind, the median and p90 of the process's CPU time a request (``time.process_time``: every
    thread of the process, the target's runtime included; ms) and the queries it made;
  - as a yardstick for the machine, the median CPU of reading one ``User`` by id (ms): divide by it to
    compare figures taken on different machines;
  - with ``--profile KINDS`` (comma-separated), a cProfile of each kind's requests (a second pass of
    ``--requests``), the ``--top`` functions by their own time and by cumulative time (wall time in
    each function: a query's wait for PostgreSQL counts); ``--profile-file FILE`` keeps each as
    ``FILE.<kind>``.
The first 20 requests of each kind warm the process up and are left out. Nothing is sent over the
network: the test client calls the WSGI handler, so the web server's own cost (uvicorn, gunicorn) is
not in these figures; ``load_production.py`` has it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.load_production import DB_NAME, percentile, prepare_profile, psql  # noqa: E402

WARM_UP = 20


class Crowd:
    """The three requests of ``load_production.py``'s clients, through Django's test client."""

    def __init__(self, setup: dict, seed: int = 0):
        from django.test import Client

        self.client = Client(HTTP_HOST="127.0.0.1")
        self.rng = random.Random(seed)
        self.statements = setup["statements"]
        self.annotators = setup["annotators"]
        self.validators = setup["validators"]
        self.pending: list[tuple[str, int]] = []

    def _headers(self, token: str) -> dict:
        return {"HTTP_AUTHORIZATION": f"Token {token}", "HTTP_ACCEPT": "application/json"}

    def create(self) -> None:
        _, token = self.rng.choice(self.annotators)
        body = {
            "statement": self.rng.choice(self.statements),
            "label": self.rng.choice(["hateful", "not-hateful"]),
        }
        response = self.client.post(
            "/api/tasks/hate-speech/examples/",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
            **self._headers(token),
        )
        assert response.status_code == 201, (response.status_code, response.content[:300])

    def next(self) -> None:
        _, token = self.rng.choice(self.validators)
        response = self.client.get("/api/tasks/hate-speech/validations/next/", **self._headers(token))
        assert response.status_code == 200, (response.status_code, response.content[:300])
        example = response.json().get("example")
        if example:
            self.pending.append((token, example["id"]))

    def ready_to_vote(self) -> None:
        """Ask for next examples until one waits for a vote (before a vote's clock starts, so that the
        vote is measured alone)."""
        while not self.pending:
            self.next()

    def vote(self) -> None:
        self.ready_to_vote()
        token, example_id = self.pending.pop(0)
        response = self.client.post(
            f"/api/examples/{example_id}/validations/",
            data=json.dumps({"verdict": self.rng.choice(["correct", "correct", "incorrect"])}),
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
            **self._headers(token),
        )
        assert response.status_code == 201, (response.status_code, response.content[:300])


def measure(crowd: Crowd, kind: str) -> tuple[float, int]:
    """(CPU ms of the process, queries) of one request of ``kind``. A vote is measured alone
    (``Crowd.ready_to_vote`` first)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if kind == "vote":
        crowd.ready_to_vote()
    request = getattr(crowd, kind)
    connection.queries_log.clear()  # a full log (9,000 queries) would make the count below 0
    with CaptureQueriesContext(connection) as queries:
        started = time.process_time()
        request()
        cpu = time.process_time() - started
    return cpu * 1000, len(queries)


def yardstick(user_id: int, times: int = 500) -> float:
    """Median CPU ms of reading one ``User`` by id (its query compiled, sent and its row built)."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    samples = []
    for _ in range(times):
        started = time.process_time()
        User.objects.get(pk=user_id)
        samples.append((time.process_time() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument(
        "--profile",
        type=lambda text: [kind for kind in text.split(",") if kind],
        help="comma-separated kinds to profile: create,next,vote",
    )
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--profile-file", help="also write each profile's stats to FILE.<kind> (pstats)")
    args = parser.parse_args()

    _env, setup = prepare_profile(annotators=50, validators=20, port=0, web_workers=1)
    try:
        crowd = Crowd(setup)
        kinds = ["create", "next", "vote"]
        samples: dict[str, list[tuple[float, int]]] = {kind: [] for kind in kinds}
        for n in range(args.requests + WARM_UP):
            for kind in kinds:
                sample = measure(crowd, kind)
                if n >= WARM_UP:
                    samples[kind].append(sample)
        stick = yardstick(setup["seeder"])
        print(
            f"{args.requests} requests of each kind after {WARM_UP} to warm up; CPU of this process a request"
        )
        print(f"{'request':<8} {'median ms':>10} {'p90 ms':>8} {'/ yardstick':>12} {'queries':>8}")
        for kind in kinds:
            cpu = [ms for ms, _ in samples[kind]]
            queries = statistics.median(q for _, q in samples[kind])
            p90 = percentile(cpu, 90)
            median = statistics.median(cpu)
            print(f"{kind:<8} {median:>10.2f} {p90:>8.2f} {median / stick:>12.1f} {queries:>8.0f}")
        print(f"yardstick: a User read by id, median {stick:.3f} ms of CPU")
        for kind in args.profile or []:
            profiler = cProfile.Profile()
            request = getattr(crowd, kind)
            for _ in range(args.requests):
                if kind == "vote":
                    crowd.ready_to_vote()
                profiler.enable()
                request()
                profiler.disable()
            if args.profile_file:
                profiler.dump_stats(f"{args.profile_file}.{kind}")
            print(f"--- profile of {args.requests} {kind} requests")
            for order in ("tottime", "cumulative"):
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(args.top)
                print(out.getvalue())
    finally:
        from django.db import connections

        connections.close_all()
        psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


if __name__ == "__main__":
    main()
