"""Faults against the production profile, each with what was lost (aim: nothing acknowledged).

Run:  .venv/bin/python benchmarks/faults_production.py [--only NAME ...]

Sets up like ``benchmarks/load_production.py`` (database ``dynabench_load``, hate-speech round 1 with a
MiniLM target, Redis database 13), starts ``scripts/serve.sh`` and then, one after the other:

  worker-kill   SIGKILL the django-q2 job workers (the sentinel's children) while an evaluation of
                3,000 items runs; the sentinel starts new workers, the sweep (stale after 20 s here)
                queues the evaluation again and it finishes. Prints the time from the kill to done.
  web-kill      SIGKILL a gunicorn worker every 4 s while 10 annotators write; clients retry a request
                that got no answer with the same Idempotency-Key.
  postgres      ``pg_ctlcluster ... restart`` while 10 annotators write: answers during the restart, the
                time until writes succeed again.
  redis         stop Redis for 8 s while 10 annotators write and an evaluation is requested: writes go on,
                /health/ says 503, the evaluation waits and runs once Redis is back (the sweep requeues
                pending evaluations after 30 s here).
  endpoint      make the round's target a remote endpoint on loopback that hangs, then one that answers
                garbage: each example is stored with a failed prediction within the endpoint timeout
                (3 s here) and the outcome page says so.

It restarts this machine's PostgreSQL and Redis: run it alone. All traffic stays on loopback.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.load_production import (  # noqa: E402 - after the path is set
    DB_NAME,
    Recorder,
    annotator_loop,
    prepare_profile,
    request,
    start_profile,
    wait_healthy,
    warm_up,
)

REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def profile_pids(script_pid: int) -> tuple[int, int]:
    """(gunicorn arbiter, qcluster parent): the serve script's children."""
    arbiter = qcluster = 0
    for pid in children(script_pid):
        line = cmdline(pid)
        if "gunicorn" in line:
            arbiter = pid
        elif "qcluster" in line:
            qcluster = pid
    return arbiter, qcluster


def writes_during(base, setup, seconds: float, fault, annotators: int = 10) -> tuple[Recorder, object]:
    """``annotators`` closed-loop writers for ``seconds``; ``fault(started)`` runs on its own thread."""
    rec = Recorder()
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=annotator_loop,
            args=(base, uid, token, setup["statements"], stop, 0.0, rec, random.Random(uid)),
            daemon=True,
        )
        for uid, token in setup["annotators"][:annotators]
    ]
    started = time.monotonic()
    result: dict = {}
    fault_thread = threading.Thread(target=lambda: result.update(fault(started) or {}), daemon=True)
    for thread in threads:
        thread.start()
    fault_thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads + [fault_thread]:
        thread.join(timeout=120)
    rec.elapsed = time.monotonic() - started
    return rec, result


def integrity(rec: Recorder, setup) -> str:
    from annotation.models import Example

    ids = [example_id for _, _, example_id in rec.acknowledged]
    annotators = [uid for uid, _ in setup["annotators"]]
    stored = set(Example.objects.filter(annotator_id__in=annotators, pk__in=ids).values_list("pk", flat=True))
    statuses = ", ".join(f"{status}: {n}" for (_, status), n in sorted(rec.statuses.items()))
    return (
        f"answers {{{statuses}}}; acknowledged {len(ids)}, lost {len(set(ids) - stored)}, "
        f"duplicated {len(ids) - len(set(ids))}, retried {rec.retries}, no answer {rec.unanswered}"
    )


def scoring_dataset(slug: str, items: list[tuple[str, str]]):
    """A hate-speech scoring dataset ``slug`` of (statement, label) items, created with its items in one
    transaction: its evaluation is requested (and queued) after the commit, as an import's is."""
    from django.db import transaction

    from leaderboards.models import Dataset, DatasetItem
    from tasks.models import Task

    with transaction.atomic():
        dataset = Dataset.objects.create(
            task=Task.objects.get(slug="hate-speech"),
            slug=slug,
            name=slug.replace("-", " ").capitalize(),
            kind="static",
            access="scoring",
            split="test",
        )
        DatasetItem.objects.bulk_create(
            DatasetItem(
                dataset=dataset, external_id=f"{slug}-{i}", inputs={"statement": text}, target=label, tags=[]
            )
            for i, (text, label) in enumerate(items)
        )
    return dataset


def fault_worker_kill(base, setup, script_pid) -> None:
    from leaderboards.models import Score

    statements = setup["statements"]
    dataset = scoring_dataset(
        "fault-eval",
        [
            (statements[i % len(statements)], random.Random(i).choice(["hateful", "not-hateful"]))
            for i in range(3000)
        ],
    )
    # The dataset's creation queued its evaluation (after commit) on Redis.
    deadline = time.monotonic() + 120
    score = None
    while time.monotonic() < deadline:
        score = Score.objects.filter(dataset=dataset).first()
        if score is not None and score.status == "running":
            break
        time.sleep(0.2)
    if score is None or score.status != "running":
        print(f"worker-kill: the evaluation did not start ({score and score.status})")
        return
    time.sleep(2)
    _, qcluster = profile_pids(script_pid)
    [sentinel] = children(qcluster) or [0]
    victims = children(sentinel)
    killed_at = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    print(f"worker-kill: SIGKILL to {len(victims)} processes under the sentinel while Score {score.pk} ran")
    while time.monotonic() - killed_at < 300:
        score.refresh_from_db()
        if score.status in ("done", "failed") and score.attempts >= 2:
            break
        time.sleep(1)
    print(
        f"worker-kill: Score {score.pk} {score.status} after {time.monotonic() - killed_at:.0f} s "
        f"(attempts {score.attempts}, perf {score.perf}); cluster parent alive: {Path(f'/proc/{qcluster}').exists()}"
    )


def fault_web_kill(base, setup, script_pid) -> None:
    arbiter, _ = profile_pids(script_pid)

    def kill_workers(started):
        killed = 0
        for at in (3, 7, 11, 15):
            time.sleep(max(0.0, started + at - time.monotonic()))
            workers = children(arbiter)
            if workers:
                os.kill(random.choice(workers), signal.SIGKILL)
                killed += 1
        return {"killed": killed}

    rec, result = writes_during(base, setup, 20, kill_workers)
    print(f"web-kill: {result.get('killed')} gunicorn workers SIGKILLed in 20 s; {integrity(rec, setup)}")


def fault_postgres(base, setup, script_pid) -> None:
    cluster = sorted(os.listdir("/etc/postgresql"))[0]
    times: dict = {}

    def restart(started):
        time.sleep(5)
        times["restart"] = time.monotonic()
        subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", cluster, "main", "restart"], check=True)
        times["up"] = time.monotonic()

    rec, _ = writes_during(base, setup, 25, restart)
    from django.db import connections

    connections.close_all()
    print(
        f"postgres: restart took {times['up'] - times['restart']:.1f} s; {integrity(rec, setup)}; "
        f"health now {request('GET', f'{base}/health/?format=json', setup['annotators'][0][1])[0]}"
    )


def fault_redis(base, setup, script_pid) -> None:
    from leaderboards.models import Score

    observed: dict = {}

    def outage(started):
        time.sleep(4)
        subprocess.run(["redis-cli", "-p", "6379", "shutdown", "nosave"], check=False, capture_output=True)
        observed["down"] = time.monotonic()
        time.sleep(1)
        observed["health"] = request("GET", f"{base}/health/?format=json", setup["annotators"][0][1])
        dataset = scoring_dataset(
            "while-redis-down", [(text, "hateful") for text in setup["statements"][:50]]
        )
        observed["dataset"] = dataset.pk
        time.sleep(6)
        subprocess.run(REDIS_START, check=True)
        observed["up"] = time.monotonic()

    rec, _ = writes_during(base, setup, 16, outage)
    status, body = observed["health"]
    print(f"redis: down {observed['up'] - observed['down']:.1f} s; /health/ while down: {status} {body}")
    print(f"redis: writes meanwhile: {integrity(rec, setup)}")
    _, qcluster = profile_pids(script_pid)
    print(f"redis: job cluster still running: {bool(qcluster)}")
    deadline = time.monotonic() + 240
    score = None
    while time.monotonic() < deadline:
        score = Score.objects.filter(dataset_id=observed["dataset"]).first()
        if score is not None and score.status == "done":
            break
        time.sleep(2)
    state = score.status if score else "no Score row"
    print(
        f"redis: evaluation requested while down: {state} {time.monotonic() - observed['up']:.0f} s after Redis returned"
    )


class Endpoint(http.server.BaseHTTPRequestHandler):
    mode = "ok"

    def do_POST(self):  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        inputs = json.loads(self.rfile.read(length))["inputs"]
        if Endpoint.mode == "hang":
            time.sleep(30)
        if Endpoint.mode == "garbage":
            body = b"<html>502 Bad Gateway</html>"
        else:
            body = json.dumps(
                {
                    "outputs": [
                        {"label": "hateful", "probabilities": {"hateful": 0.9, "not-hateful": 0.1}}
                        for _ in inputs
                    ]
                }
            ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def fault_endpoint(base, setup, script_pid) -> None:
    from models_registry.jobs import check_model
    from models_registry.round_targets import set_round_targets
    from models_registry.services import register_endpoint_model
    from tasks.models import Round, Task

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    task = Task.objects.get(slug="hate-speech")
    model, _ = register_endpoint_model(
        task=task, name="fault-endpoint", url=f"http://127.0.0.1:{server.server_port}/predict"
    )
    check_model(model.pk)
    model.refresh_from_db()
    original = list(Round.objects.get(pk=setup["round_id"]).targets.values_list("model_id", flat=True))
    set_round_targets(round=Round.objects.get(pk=setup["round_id"]), models=[model])
    token = setup["annotators"][0][1]
    try:
        for mode in ("hang", "garbage"):
            Endpoint.mode = mode
            started = time.perf_counter()
            status, answer = request(
                "POST",
                f"{base}/api/tasks/hate-speech/examples/",
                token,
                {"statement": f"endpoint {mode} case", "label": "hateful"},
            )
            took = time.perf_counter() - started
            outputs = (answer or {}).get("model_outputs") or [{}]
            print(
                f"endpoint {mode}: {status} in {took:.1f} s, prediction {outputs[0].get('status')}, "
                f"example status {(answer or {}).get('status')}"
            )
    finally:
        from models_registry.models import RegisteredModel

        set_round_targets(
            round=Round.objects.get(pk=setup["round_id"]),
            models=list(RegisteredModel.objects.filter(pk__in=original)),
        )
        server.shutdown()


SCENARIOS = {
    "worker-kill": fault_worker_kill,
    "web-kill": fault_web_kill,
    "postgres": fault_postgres,
    "redis": fault_redis,
    "endpoint": fault_endpoint,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--port", type=int, default=8210)
    args = parser.parse_args()
    extra = {
        "DYNABENCH_EVALUATION_STALE_SECONDS": "20",
        "DYNABENCH_REQUEUE_PENDING_SECONDS": "30",
        "DYNABENCH_ENDPOINT_TIMEOUT_SECONDS": "3",
        "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": "127.0.0.0/8",
        "DYNABENCH_JOB_WORKERS": "1",
    }
    env, setup = prepare_profile(annotators=10, validators=0, port=args.port, web_workers=3, extra=extra)
    server = start_profile(env)
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_healthy(base)
        warm_up(base, setup, 3)
        for name in args.only:
            SCENARIOS[name](base, setup, server.pid)
            if server.poll() is not None:
                print(f"the profile stopped during {name} (exit {server.returncode})")
                break
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        from django.db import connections

        connections.close_all()
        subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-q",
                "-c",
                f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)",
            ],
            check=False,
        )


if __name__ == "__main__":
    main()
