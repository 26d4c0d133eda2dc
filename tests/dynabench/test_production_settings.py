"""The production profile's settings: ``check --deploy`` is clean with the production variables,
REDIS_URL moves the cache and the job broker to Redis, HTTPS turns on secure cookies and HSTS, and every
page carries the Content-Security-Policy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "x" * 30 + "-a-long-random-production-secret-" + "y" * 20,
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/dynabench",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "DYNABENCH_HTTPS": "1",
    "ALLOWED_HOSTS": "dynabench.example.org",
}


def _run(args: list[str], **env) -> subprocess.CompletedProcess:
    drop = {"SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", "REDIS_URL", "DYNABENCH_HTTPS", "DATABASE_URL"}
    clean = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def _settings(*names: str, **env) -> dict:
    code = "import json, dynabench.settings as s; print(json.dumps({n: getattr(s, n, None) for n in %r}, default=str))"
    result = _run(["-c", code % (names,)], **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_check_deploy_is_clean_with_the_production_variables():
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_when_https_is_off():
    """The check above can fail: without DYNABENCH_HTTPS the cookies are not secure and there is no HSTS."""
    result = _run(["manage.py", "check", "--deploy"], **{**PRODUCTION, "DYNABENCH_HTTPS": "0"})
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout


def test_redis_url_puts_the_cache_and_the_broker_on_redis():
    values = _settings("CACHES", "Q_CLUSTER", **PRODUCTION)
    assert values["CACHES"]["default"]["BACKEND"] == "core.cache.FailSoftRedisCache"
    assert values["CACHES"]["default"]["LOCATION"] == "redis://127.0.0.1:6379/0"
    assert values["Q_CLUSTER"]["redis"] == "redis://127.0.0.1:6379/0"
    assert "orm" not in values["Q_CLUSTER"]


def test_without_redis_url_the_demo_keeps_the_orm_broker_and_a_local_cache():
    values = _settings("CACHES", "Q_CLUSTER", DEBUG="1")
    assert values["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    assert values["Q_CLUSTER"]["orm"] == "default"
    assert "redis" not in values["Q_CLUSTER"]


def test_https_turns_on_secure_cookies_hsts_and_the_proxy_header():
    on = _settings(
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_PROXY_SSL_HEADER",
        "SECURE_SSL_REDIRECT",
        **PRODUCTION,
    )
    assert on == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_SSL_REDIRECT": True,
    }
    off = _settings("SESSION_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_SSL_REDIRECT", DEBUG="1")
    assert off == {"SESSION_COOKIE_SECURE": False, "SECURE_HSTS_SECONDS": 0, "SECURE_SSL_REDIRECT": False}


def test_cross_site_frames_make_the_cookies_samesite_none_and_need_https():
    """MTurk frames the HIT from another site: Lax cookies would not be sent there, so the worker's session
    would be lost; SameSite=None is only accepted by browsers on Secure cookies."""
    framed = _settings(
        "SESSION_COOKIE_SAMESITE", "CSRF_COOKIE_SAMESITE", **PRODUCTION, DYNABENCH_CROSS_SITE_FRAMES="1"
    )
    assert framed == {"SESSION_COOKIE_SAMESITE": "None", "CSRF_COOKIE_SAMESITE": "None"}
    # Without it the project leaves Django's default, Lax (not set in dynabench.settings).
    assert _settings("SESSION_COOKIE_SAMESITE", **PRODUCTION) == {"SESSION_COOKIE_SAMESITE": None}
    refused = _run(["-c", "import dynabench.settings"], DEBUG="1", DYNABENCH_CROSS_SITE_FRAMES="1")
    assert refused.returncode != 0 and "DYNABENCH_CROSS_SITE_FRAMES needs DYNABENCH_HTTPS=1" in refused.stderr


def test_database_connections_persist_with_health_checks():
    values = _settings("DATABASES", **PRODUCTION)
    assert values["DATABASES"]["default"]["CONN_MAX_AGE"] == 60
    assert values["DATABASES"]["default"]["CONN_HEALTH_CHECKS"] is True


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_inline_script(client):
    response = client.get("/")
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/api/docs/", "/accounts/login/", "/accounts/signup/", "/admin/login/"])
def test_pages_have_no_inline_script_the_policy_would_block(client, url):
    response = client.get(url)
    assert response.status_code == 200
    assert "Content-Security-Policy" in response
    assert INLINE_SCRIPT.findall(response.content.decode()) == []


@pytest.mark.django_db
def test_the_swagger_page_loads_its_start_script_from_this_site(client):
    page = client.get("/api/docs/").content.decode()
    [script_url] = re.findall(r'<script src="([^"]*\?script=)"', page) or re.findall(
        r'<script src="(/api/docs/\?[^"]*)"', page
    )
    script = client.get(script_url.replace("&amp;", "&"))
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()
