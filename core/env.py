"""Reading the settings from the environment: django-environ, with every bad value refused at start-up
by its variable's name.

Without this, a value that does not parse failed with a bare ``ValueError`` ("could not convert string
to float: 'abc'") that did not say which of forty settings was wrong, and some bad values passed
start-up and failed later, on the request that used them: a throttle rate of ``lots`` made every
example written through the API a 500, a network of ``notacidr`` every remote endpoint's check.
``Env`` reads like ``environ.FileAwareEnv`` (``NAME_FILE`` holds the value of ``NAME``, for secrets)
and raises ``ImproperlyConfigured`` naming the variable, with its value when it is a number, a rate, a
network or a level, and never for anything else (a URL may carry a password).
"""

from __future__ import annotations

import ipaddress
import re
import warnings

import environ
from django.core.exceptions import ImproperlyConfigured

NOTSET = environ.Env.NOTSET
#: Database engines this project runs on (docs/deployment.md): PostgreSQL, and SQLite for the demo.
ENGINES = {
    "django.db.backends.postgresql": "postgres:// (or postgresql://)",
    "django.db.backends.sqlite3": "sqlite:///",
}
#: A Django REST framework throttle rate: requests per second, minute, hour or day ("120/min").
RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Env(environ.FileAwareEnv):
    """``environ.FileAwareEnv`` whose bad values raise ``ImproperlyConfigured`` naming the variable
    (module docstring). ``int`` and ``float`` take an optional ``minimum``; ``rate``, ``networks`` and
    ``log_level`` read values that are checked the way their users will read them."""

    EXPECTED = {int: "a whole number", float: "a number"}

    def get_value(self, var, cast=None, default=NOTSET, parse_default=False):
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except OSError as exc:  # NAME_FILE names a file that cannot be read
            raise ImproperlyConfigured(
                f"{var}_FILE={self.ENVIRON.env.get(f'{var}_FILE')!r}: cannot read that file ({exc.strerror})"
            ) from None
        except (ValueError, TypeError) as exc:
            if cast in self.EXPECTED:
                raise self.refused(var, f"expected {self.EXPECTED[cast]}") from None
            raise self.unreadable(var, exc) from None

    def int(self, var, default=NOTSET, minimum=None, maximum=None):
        """An integer, at least ``minimum`` and at most ``maximum`` when given."""
        value = self._at_least(var, super().int(var, default=default), minimum, "a whole number")
        if maximum is not None and value is not None and value > maximum:
            raise self.refused(var, f"expected a whole number of at most {maximum}")
        return value

    def float(self, var, default=NOTSET, minimum=None):
        """A number, at least ``minimum`` when given."""
        return self._at_least(var, super().float(var, default=default), minimum, "a number")

    def db_url(self, var="DATABASE_URL", default=NOTSET, engine=None):
        """Django's ``DATABASES`` entry from a URL, on an engine of ``ENGINES``. The value is never
        shown: it may carry a password."""
        with warnings.catch_warnings(record=True) as warned:
            # The parser warns with the URL's parts (a password among them) where it ignores some.
            warnings.simplefilter("always")
            try:
                config = super().db_url(var, default=default, engine=engine)
            except (ValueError, TypeError) as exc:
                raise self.unreadable(var, exc) from None
        if config.get("ENGINE") not in ENGINES:
            raise ImproperlyConfigured(
                f"{var} names no database this project runs on: expected a URL starting "
                f"{' or '.join(ENGINES.values())} (value not shown)"
            )
        if warned or (config["ENGINE"].endswith("sqlite3") and config.get("NAME") in ("", ":memory:")):
            # sqlite://host/x and sqlite://:memory: gave an in-memory database, gone with the process.
            raise ImproperlyConfigured(
                f"{var}: an SQLite URL names a file, like sqlite:////absolute/path/db.sqlite3 (value not shown)"
            )
        return config

    db = db_url  # django-environ's alias is bound to its own db_url

    def rate(self, var, default=NOTSET) -> str:
        """A throttle rate as Django REST framework reads it: ``<requests>/<s|min|hour|day>``."""
        value = self.str(var, default=default).strip()
        if not RATE.fullmatch(value):
            raise self.refused(
                var, "expected requests per period, at least 1, like 120/min (s, min, hour or day)"
            )
        return value

    def networks(self, var, default=NOTSET) -> list[str]:
        """A comma-separated list of networks in CIDR notation (``10.0.0.0/8,::1/128``), blanks dropped."""
        values = [v.strip() for v in self.list(var, default=default) if v.strip()]
        for value in values:
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                raise self.refused(
                    var, f"{value!r} is not a network; expected CIDR notation, like 10.0.0.0/8"
                ) from None
        return values

    def redis_url(self, var, default=NOTSET) -> str:
        """A Redis URL (``redis://``, ``rediss://`` or ``unix://``), or "" for none. The value is never
        shown: it may carry a password."""
        value = self.str(var, default=default).strip()
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ImproperlyConfigured(
                f"{var} is not a Redis URL: expected redis://, rediss:// or unix:// (value not shown)"
            )
        return value

    def log_level(self, var, default=NOTSET) -> str:
        """A ``logging`` level name, in capitals."""
        value = self.str(var, default=default).strip().upper()
        if value not in LOG_LEVELS:
            raise self.refused(var, f"expected one of {', '.join(LOG_LEVELS)}")
        return value

    def unreadable(self, var: str, exc: Exception) -> ImproperlyConfigured:
        """The error for a value of ``var`` that does not parse, named by its kind of error only: the
        value may carry a password."""
        return ImproperlyConfigured(f"{var} cannot be read ({type(exc).__name__}; value not shown)")

    def refused(self, var: str, why: str) -> ImproperlyConfigured:
        """The error for a value of ``var`` that is read but not allowed: ``NAME='value': why``."""
        return ImproperlyConfigured(f"{var}={self.ENVIRON.get(var)!r}: {why}")

    def _at_least(self, var, value, minimum, what):
        if minimum is not None and value is not None and value < minimum:
            raise self.refused(var, f"expected {what} of at least {minimum}")
        return value
