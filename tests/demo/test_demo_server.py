"""``manage.py demo_server`` (scripts/demo.sh): runserver that starts loading the open rounds' targets
first, as a gunicorn worker does, so the demo's first request does not pay a cold load."""

from __future__ import annotations

from django.core.management.commands.runserver import Command as RunserverCommand

from demo.management.commands import demo_server


def test_it_starts_the_preload_before_serving(monkeypatch):
    calls = []
    monkeypatch.setattr(
        demo_server, "prepare_web_worker", lambda processes: calls.append(("preload", processes))
    )
    monkeypatch.setattr(
        RunserverCommand, "inner_run", lambda self, *a, **o: calls.append(("serve", o["addrport"]))
    )
    demo_server.Command().inner_run(addrport="127.0.0.1:8011")
    assert calls == [("preload", 1), ("serve", "127.0.0.1:8011")]


def test_the_demo_script_serves_with_it():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert 'manage.py demo_server "$DYNABENCH_HOST:$DYNABENCH_PORT" --noreload' in script
    assert "manage.py runserver" not in script
