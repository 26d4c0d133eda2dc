"""``manage.py demo_server`` (scripts/demo.sh): runserver that starts loading the open rounds' targets
first, as a gunicorn worker does, so the demo's first request does not pay a cold load, and serves
through ``demo.server.QueueingWSGIServer`` (tested on sockets in test_queueing_server.py)."""

from __future__ import annotations

from django.core.management.commands.runserver import Command as RunserverCommand

from demo.management.commands import demo_server
from demo.server import QueueingWSGIServer


def test_it_starts_the_preload_before_serving(monkeypatch):
    calls = []
    monkeypatch.setattr(
        demo_server,
        "prepare_web_worker",
        lambda processes, threads, threads_leave_pool: calls.append(
            ("preload", processes, threads, threads_leave_pool)
        ),
    )
    monkeypatch.setattr(
        RunserverCommand, "inner_run", lambda self, *a, **o: calls.append(("serve", o["addrport"]))
    )
    demo_server.Command().inner_run(addrport="127.0.0.1:8011")
    # One process with 8 request threads; an answer's thread leaves the pool (core/request_threads.py),
    # so the slots are a batch's size, not a share of the threads (runtime/slots.py).
    assert calls == [("preload", 1, 8, True), ("serve", "127.0.0.1:8011")]


def serving_options(monkeypatch, *argv: str) -> tuple[type, dict]:
    """(the server class, the options) runserver's ``inner_run`` is given by ``demo_server *argv``."""
    seen = {}

    def inner_run(self, *args, **options):
        seen.update(server_cls=self.server_cls, options=options)

    monkeypatch.setattr(demo_server, "prepare_web_worker", lambda **_: None)
    monkeypatch.setattr(RunserverCommand, "inner_run", inner_run)
    command = demo_server.Command()
    options = vars(command.create_parser("manage.py", "demo_server").parse_args(list(argv)))
    command.inner_run(**options)
    return seen["server_cls"], seen["options"]


def test_it_serves_through_the_queueing_server_and_not_a_thread_per_connection(monkeypatch):
    server_cls, options = serving_options(monkeypatch, "127.0.0.1:8011", "--noreload")
    assert issubclass(server_cls, QueueingWSGIServer)
    assert server_cls.request_queue_size >= 128
    assert server_cls.workers == 8
    assert options["use_threading"] is False  # no ThreadingMixIn in front of the pool


def test_its_pool_size_can_be_chosen_and_nothreading_means_one_worker(monkeypatch):
    assert serving_options(monkeypatch, "127.0.0.1:8011", "--workers", "3")[0].workers == 3
    assert serving_options(monkeypatch, "127.0.0.1:8011", "--nothreading")[0].workers == 1


def test_the_demo_script_serves_with_it():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert 'manage.py demo_server "$DYNABENCH_HOST:$DYNABENCH_PORT" --noreload' in script
    assert "manage.py runserver" not in script
