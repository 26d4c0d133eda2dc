"""The settings module refuses to start without a secret unless DEBUG is on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _import_settings(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE", "DEBUG"}}
    return subprocess.run(
        [sys.executable, "-c", "import dynabench.settings as s; print(s.DEBUG, len(s.SECRET_KEY))"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_secret_key_is_required_without_debug():
    result = _import_settings(DEBUG="0")
    assert result.returncode != 0
    assert "Set SECRET_KEY (or SECRET_KEY_FILE)" in result.stderr


def test_secret_key_can_come_from_a_file_and_is_stripped(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret-value-of-20-chars\n", encoding="utf-8")
    result = _import_settings(DEBUG="false", SECRET_KEY_FILE=str(secret))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "24"]


def test_debug_allows_a_missing_secret():
    result = _import_settings(DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "True"


def _last_line(result: subprocess.CompletedProcess) -> str:
    return (result.stdout + result.stderr).strip().splitlines()[-1]


def test_a_number_that_is_not_one_names_its_variable():
    result = _import_settings(DEBUG="1", DYNABENCH_INFERENCE_BATCH_WINDOW_MS="abc")
    assert result.returncode != 0
    assert _last_line(result) == (
        "django.core.exceptions.ImproperlyConfigured: DYNABENCH_INFERENCE_BATCH_WINDOW_MS='abc': "
        "expected a number"
    )
    result = _import_settings(DEBUG="1", DYNABENCH_DB_CONN_MAX_AGE="60s")
    assert _last_line(result) == (
        "django.core.exceptions.ImproperlyConfigured: DYNABENCH_DB_CONN_MAX_AGE='60s': "
        "expected a whole number"
    )


def test_an_unreadable_database_url_is_named_without_printing_it():
    # A URL carries a password: the message names the variable, never the value.
    result = _import_settings(DEBUG="1", DATABASE_URL="postgres://u:hunter2@db:port/x")
    assert result.returncode != 0
    assert _last_line(result).startswith(
        "django.core.exceptions.ImproperlyConfigured: DATABASE_URL cannot be read (ValueError"
    )
    assert "hunter2" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "env, last_line",
    [
        (
            {"DYNABENCH_CREATE_RATE": "lots"},
            "DYNABENCH_CREATE_RATE='lots': expected requests per period, at least 1, like 120/min (s, min, "
            "hour or day)",
        ),
        (
            {"DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": "10.0.0.0/8,notacidr"},
            "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS='10.0.0.0/8,notacidr': 'notacidr' is not a network; "
            "expected CIDR notation, like 10.0.0.0/8",
        ),
        (
            {"DYNABENCH_INFERENCE_TIMEOUT_SECONDS": "-1"},
            "DYNABENCH_INFERENCE_TIMEOUT_SECONDS='-1': expected a number of at least 0",
        ),
        (
            {"DYNABENCH_INFERENCE_BATCH_MAX": "0"},
            "DYNABENCH_INFERENCE_BATCH_MAX='0': expected a whole number of at least 1",
        ),
        (
            {"DYNABENCH_ONNX_THREADS": "-3"},
            "DYNABENCH_ONNX_THREADS='-3': expected a whole number of at least 0",
        ),
        (
            {"LOG_LEVEL": "verbose"},
            "LOG_LEVEL='verbose': expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        (
            {"SECRET_KEY_FILE": "/nonexistent/key"},
            "SECRET_KEY_FILE='/nonexistent/key': cannot read that file (No such file or directory)",
        ),
        (
            {"DATABASE_URL": "secretpw"},
            "DATABASE_URL names no database this project runs on: expected a URL starting postgres:// (or "
            "postgresql://) or sqlite:/// (value not shown)",
        ),
        (
            {"DATABASE_URL": "sqlite://u:secretpw@host/x"},
            "DATABASE_URL: an SQLite URL names a file, like sqlite:////absolute/path/db.sqlite3 (value not shown)",
        ),
        (
            {"DATABASE_URL": "sqlite://"},
            "DATABASE_URL: an SQLite URL names a file, like sqlite:////absolute/path/db.sqlite3 (value not shown)",
        ),
        (
            {"DYNABENCH_CREATE_RATE": "0/min"},
            "DYNABENCH_CREATE_RATE='0/min': expected requests per period, at least 1, like 120/min (s, min, "
            "hour or day)",
        ),
        (
            {"REDIS_URL": "junk:secretpw"},
            "REDIS_URL is not a Redis URL: expected redis://, rediss:// or unix:// (value not shown)",
        ),
        (
            {"DYNABENCH_THROUGHPUT_PASSES": "-1"},
            "DYNABENCH_THROUGHPUT_PASSES='-1': expected a whole number of at least 1",
        ),
        (
            {"DATABASE_URL": "postgresql+psycopg://u:secretpw@h/x"},
            "DATABASE_URL names no database this project runs on: expected a URL starting postgres:// (or "
            "postgresql://) or sqlite:/// (value not shown)",
        ),
    ],
)
def test_a_value_that_would_fail_later_stops_the_start_by_name(env, last_line):
    result = _import_settings(DEBUG="1", **env)
    assert result.returncode != 0
    assert _last_line(result) == f"django.core.exceptions.ImproperlyConfigured: {last_line}"
    assert "secretpw" not in result.stdout + result.stderr


def test_good_values_of_the_checked_kinds_are_read():
    code = (
        "from django.conf import settings as s; print(s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']"
        "['example_create'], s.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS, s.LOGGING['root']['level'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "dynabench.settings",
            "DEBUG": "1",
            "DYNABENCH_CREATE_RATE": " 30/hour ",
            "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": "10.1.2.0/24, ::1/128,",
            "LOG_LEVEL": "warning",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "30/hour ['10.1.2.0/24', '::1/128'] WARNING"


@pytest.mark.parametrize(
    "env, last_line",
    [
        ({}, "127.0.0.1:8000 4 60"),
        ({"DYNABENCH_WEB_THREADS": "", "DYNABENCH_PORT": "8123"}, "127.0.0.1:8123 4 60"),
        (
            {"DYNABENCH_WEB_WORKERS": "junk"},
            "django.core.exceptions.ImproperlyConfigured: DYNABENCH_WEB_WORKERS='junk': expected a whole number",
        ),
        (
            {"DYNABENCH_WEB_TIMEOUT": "-1"},
            "django.core.exceptions.ImproperlyConfigured: DYNABENCH_WEB_TIMEOUT='-1': expected a whole number "
            "of at least 1",
        ),
    ],
)
def test_the_gunicorn_settings_are_checked_by_name(env, last_line):
    code = (
        "import runpy; g = runpy.run_path('gunicorn.conf.py'); print(g['bind'], g['threads'], g['timeout'])"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DYNABENCH_WEB_", "DYNABENCH_PORT"))}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert _last_line(result) == last_line
