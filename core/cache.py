"""Django's Redis cache that fails soft: while Redis is unreachable, the site keeps working without it.

Nothing the platform stores lives only in the cache: sessions, examples, votes and jobs' results are in
PostgreSQL. The cache holds the API throttle's and allauth's rate-limit counts. With Django's own
``RedisCache`` a Redis outage would turn every throttled request and every log-in into a 500. Here a
failing operation (``redis.RedisError``, which covers refused connections and timeouts) is logged and
answered as if the cache were empty: ``get`` gives the default, ``set``/``delete`` do nothing, ``add``
reports success, so rate limits are not enforced while Redis is down (docs/deployment.md, "When Redis is
down"). After a failure the cache is skipped for ``PAUSE_SECONDS``, so a Redis that hangs costs one
socket timeout per pause per process, not one per request.

``strict_roundtrip`` is the exception: the health check must see the outage (``core.health``).

The connections to Redis are shared by the whole process (``SharedPoolClient``), not opened per cache
object.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)

PAUSE_SECONDS = 5.0

#: (server, pool class, pool options) -> (connection pool, client): one per process (redis-py's pool
#: starts afresh in a forked child, ``ConnectionPool._checkpid``).
_SHARED: dict[tuple, tuple[redis.ConnectionPool, redis.Redis]] = {}
_SHARED_LOCK = threading.Lock()


class _Pause:
    """Until when (``time.monotonic``) a cache on some servers is skipped after a failure."""

    until = 0.0


#: servers -> their pause, one per process.
_PAUSES: dict[tuple, _Pause] = {}


class SharedPoolClient(RedisCacheClient):
    """Django's Redis cache client, its connection pools and clients shared by the process.

    Why: Django makes a cache object per thread and per async context (``django.core.cache.caches``),
    and each object made its own connection pool. Under the production profile's ASGI workers every
    request runs in a thread of its own, so every request that touched the cache (the API's throttles,
    the red-teaming turn rate) opened a new connection to Redis: a TCP connect, the client's greeting, and
    redis-py reading its own package's metadata from disk, 15% of a red-teaming turn's CPU in a profile
    of 200 streams (docs/serving.md, "Many streams per worker"). Same arguments as ``RedisCacheClient``.
    """

    def _shared(self, write: bool) -> tuple[redis.ConnectionPool, redis.Redis]:
        server = self._servers[self._get_connection_pool_index(write)]
        key = (server, self._pool_class, repr(sorted(self._pool_options.items())))
        shared = _SHARED.get(key)
        if shared is None:
            with _SHARED_LOCK:
                shared = _SHARED.get(key)
                if shared is None:
                    pool = self._pool_class.from_url(server, **self._pool_options)
                    shared = _SHARED[key] = (pool, self._client(connection_pool=pool))
        return shared

    def _get_connection_pool(self, write):
        return self._shared(write)[0]

    def get_client(self, key=None, *, write=False):
        return self._shared(write)[1]


class FailSoftRedisCache(RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` whose operations never raise for an unreachable
    Redis (module docstring). Same ``LOCATION`` and ``OPTIONS``."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = SharedPoolClient
        # The pause is the process's, as the connections are: Django makes a cache object per request
        # thread under ASGI, and a pause kept per object would pause nothing.
        self._pause = _PAUSES.setdefault(tuple(self._servers), _Pause())

    def _soft(self, operation: str, call, fallback):
        if time.monotonic() < self._pause.until:
            return fallback
        try:
            return call()
        except redis.RedisError as exc:
            with _SHARED_LOCK:
                first = time.monotonic() >= self._pause.until
                self._pause.until = time.monotonic() + PAUSE_SECONDS
            if first:
                logger.warning(
                    "cache unreachable (%s in %s); running without it for %ss", exc, operation, PAUSE_SECONDS
                )
            return fallback

    def get(self, key, default=None, version=None):
        return self._soft("get", lambda: super(FailSoftRedisCache, self).get(key, default, version), default)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._soft("set", lambda: super(FailSoftRedisCache, self).set(key, value, timeout, version), None)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._soft(
            "add", lambda: super(FailSoftRedisCache, self).add(key, value, timeout, version), True
        )

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._soft(
            "touch", lambda: super(FailSoftRedisCache, self).touch(key, timeout, version), False
        )

    def delete(self, key, version=None):
        return self._soft("delete", lambda: super(FailSoftRedisCache, self).delete(key, version), False)

    def get_many(self, keys, version=None):
        return self._soft("get_many", lambda: super(FailSoftRedisCache, self).get_many(keys, version), {})

    def has_key(self, key, version=None):
        return self._soft("has_key", lambda: super(FailSoftRedisCache, self).has_key(key, version), False)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._soft(
            "set_many", lambda: super(FailSoftRedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys, version=None):
        self._soft("delete_many", lambda: super(FailSoftRedisCache, self).delete_many(keys, version), None)

    def clear(self):
        return self._soft("clear", lambda: super(FailSoftRedisCache, self).clear(), False)

    def strict_roundtrip(self) -> None:
        """Write, read back and delete a probe key, straight to Redis (no soft failure, no pause).

        Raises:
            redis.RedisError: Redis is unreachable or failed.
            ValueError: the value read back differs from the one written.
        """
        key, value = f"health:{uuid.uuid4().hex}", uuid.uuid4().hex
        RedisCache.set(self, key, value, 10)
        if RedisCache.get(self, key) != value:
            raise ValueError("the cache gave back another value than the one written")
        RedisCache.delete(self, key)
        with _SHARED_LOCK:
            self._pause.until = 0.0  # Redis answers again: stop skipping it
