"""The production profile end to end, as CI runs it once: ``scripts/serve.sh`` starts gunicorn and the
django-q2 cluster on Redis against PostgreSQL (this test's database); /health/ answers 200; an example
written through the API is scored by the target in a gunicorn worker; an evaluation queued on Redis by
another process runs on the cluster's worker; SIGTERM to the profile's process group ends every process
within seconds. Everything listens and connects on loopback only."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import redis
from django.db import connection
from rest_framework.authtoken.models import Token

from leaderboards.models import Score

ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = "redis://127.0.0.1:6379/14"
STOP_SECONDS = 15


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _marked_pids(mark: str) -> list[int]:
    """Processes whose environment carries ``DYNABENCH_SMOKE_MARK=mark`` (this profile's, however deep)."""
    needle = f"DYNABENCH_SMOKE_MARK={mark}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _get(url: str, token: str | None = None, timeout: float = 10) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback only
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post_json(url: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback only
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture
def profile_env(tmp_path, transactional_db):
    db = connection.settings_dict
    mark = uuid.uuid4().hex
    port = _free_port()
    redis.Redis.from_url(REDIS_DB).flushdb()
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in {"DEBUG", "SECRET_KEY_FILE", "DYNABENCH_JOBS_SYNC"}
        },
        "DEBUG": "0",
        "SECRET_KEY": "smoke-" + uuid.uuid4().hex * 2,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": REDIS_DB,
        "DYNABENCH_PORT": str(port),
        "DYNABENCH_VAR_DIR": str(tmp_path / "var"),
        "DYNABENCH_MODEL_DIR": str(tmp_path / "models"),
        "DYNABENCH_WEB_WORKERS": "2",
        "DYNABENCH_JOB_WORKERS": "1",
        "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": "127.0.0.0/8",
        "DYNABENCH_SMOKE_MARK": mark,
    }
    return env, port, mark


def test_serve_profile_health_write_evaluate_and_stop(
    profile_env, hate_task, hate_round, tiny_model_dir, annotator
):
    from tests.factories.models_registry import registered_target

    env, port, mark = profile_env
    model = registered_target(
        task=hate_task, round_=hate_round, name="smoke-target", path=tiny_model_dir, description="smoke"
    )
    token = Token.objects.create(user=annotator).key
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        ["bash", "scripts/serve.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                status, body = _get(f"{base}/health/?format=json", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert status == 200, (status, server.poll())
        assert set(json.loads(body).values()) == {"OK"}

        # One example written through the API, scored by the target inside a gunicorn worker.
        status, example = _post_json(
            f"{base}/api/tasks/{hate_task.slug}/examples/",
            {"statement": "they are not our friends", "label": "hateful"},
            token,
        )
        assert status == 201, example
        assert [o["status"] for o in example["model_outputs"]] == ["ok"]
        assert example["model_outputs"][0]["model"] == model.pk

        # An evaluation queued on Redis by another process (a dataset created, as an import does) runs on
        # the cluster's worker.
        code = (
            "from django.db import transaction; from tasks.models import Task; "
            "from tests.factories.leaderboards import make_toy_dataset\n"
            "with transaction.atomic():\n"
            "    make_toy_dataset(Task.objects.get(slug='hate-speech'), 'smoke-test')\n"
        )
        queued = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert queued.returncode == 0, queued.stderr
        deadline = time.monotonic() + 180
        score = None
        while time.monotonic() < deadline:
            score = Score.objects.filter(model=model, dataset__slug="smoke-test").first()
            if score is not None and score.status in (Score.Status.DONE, Score.Status.FAILED):
                break
            time.sleep(1)
        assert score is not None and score.status == Score.Status.DONE, score and score.error_message
        assert 0.0 <= score.perf <= 1.0
    finally:
        before = _marked_pids(mark)
        started = time.monotonic()
        os.killpg(server.pid, signal.SIGTERM)
        while _marked_pids(mark) and time.monotonic() - started < STOP_SECONDS:
            time.sleep(0.2)
        left = _marked_pids(mark)
        output = server.communicate(timeout=10)[0].decode(errors="replace")
        for pid in left:  # never leave a stray server behind, even when the assertion below fails
            os.kill(pid, signal.SIGKILL)
    assert len(before) >= 4, output  # the script, gunicorn's arbiter and workers, the cluster
    assert left == [], f"still running {STOP_SECONDS}s after SIGTERM: {left}\n{output[-3000:]}"
