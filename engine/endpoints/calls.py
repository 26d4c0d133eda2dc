"""HTTP client of remote inference endpoints (standard library only), and the signing scheme they check.

Protocol (what an endpoint owner implements):

    POST <endpoint_url>
    Content-Type: application/json
    X-Dynabench-Timestamp: <Unix time in whole seconds>
    X-Dynabench-Signature: sha256=<hex HMAC-SHA256(secret, timestamp_ascii + body_bytes)>

    {"inputs": [{"<input field>": "<text>", ...}, ...]}

The endpoint answers 2xx with ``{"outputs": [{"label": str, "probabilities": {label: float}}, ...]}``:
one output per input, in order; ``label`` one of the task's labels; ``probabilities`` one entry per
task label, each in [0, 1], summing to 1 (within ``PROBABILITY_TOLERANCE``). The body of the answer
may be at most ``MAX_RESPONSE_BYTES``. An endpoint should refuse requests whose signature does not
verify or whose timestamp is older than a few minutes (``verify_signature`` does both).

Every failure raises ``InferenceError`` with a message naming what was wrong. Redirects are not
followed (a POST must not turn into a GET elsewhere).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import math
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

from engine.endpoints.addresses import check_endpoint_url, connect_checked
from engine.runtime.model_files import InferenceError

logger = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 1_000_000
PROBABILITY_TOLERANCE = 1e-3
SIGNATURE_HEADER = "X-Dynabench-Signature"
TIMESTAMP_HEADER = "X-Dynabench-Timestamp"
USER_AGENT = "dynabench-endpoint-client/1"


def generate_secret() -> str:
    """A new per-model signing secret: 43 URL-safe characters (256 random bits)."""
    return secrets.token_urlsafe(32)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value for ``body`` sent at ``timestamp``: ``"sha256=<64 hex digits>"``."""
    digest = hmac.new(secret.encode(), timestamp.encode("ascii") + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(
    secret: str, timestamp: str, body: bytes, signature: str, *, max_age_seconds: int = 300
) -> bool:
    """Whether ``signature`` signs ``body`` at ``timestamp`` with ``secret`` and the timestamp is fresh.

    For endpoint implementers (and the tests' loopback endpoint); compares in constant time.
    """
    try:
        sent = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs(time.time() - sent) > max_age_seconds:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature or "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise InferenceError(f"the endpoint redirected (HTTP {code}) to {newurl}; redirects are not followed")


class _CheckedHTTPConnection(http.client.HTTPConnection):
    """Connects only to an address the endpoint rule allows (``endpoint_addresses.connect_checked``)."""

    def connect(self) -> None:
        self.sock = connect_checked(self.host, self.port, self.timeout)


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    """The same for HTTPS; TLS checks the certificate against the host name, not the address."""

    def connect(self) -> None:
        sock = connect_checked(self.host, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_CheckedHTTPConnection, req)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_CheckedHTTPSConnection, req, context=self._context)


# No proxy from the environment either: the connection goes to the checked address itself.
_opener = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), _NoRedirect, _CheckedHTTPHandler, _CheckedHTTPSHandler
)


def _read_limited(response, deadline: float) -> bytes:
    length = response.headers.get("Content-Length")
    # ASCII digits only ('²'.isdigit() is true) and a bounded length: int() of thousands of digits raises.
    if (
        length
        and length.isascii()
        and length.isdigit()
        and (len(length) > 15 or int(length) > MAX_RESPONSE_BYTES)
    ):
        raise InferenceError(
            f"the endpoint's answer is {length[:20]} bytes, larger than {MAX_RESPONSE_BYTES:,} bytes"
        )
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise InferenceError(f"the endpoint's answer is larger than {MAX_RESPONSE_BYTES:,} bytes")
        chunks.append(chunk)


def _post(url: str, secret: str, body: bytes, timeout: float) -> bytes:
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(secret, timestamp, body),
        },
    )
    deadline = time.monotonic() + timeout
    try:
        with _opener.open(request, timeout=timeout) as response:
            return _read_limited(response, deadline)
    except urllib.error.HTTPError as exc:
        # The body goes to the server log only: the message reaches whoever calls predict, and an
        # endpoint's error page is the endpoint's, not theirs to read.
        logger.warning("endpoint %s answered HTTP %s: %r", url, exc.code, exc.read(300))
        raise InferenceError(f"the endpoint answered HTTP {exc.code} {exc.reason}") from exc
    except TimeoutError as exc:
        raise InferenceError(f"the endpoint did not answer within {timeout:g} s (timeout)") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise InferenceError(f"the endpoint did not answer within {timeout:g} s (timeout)") from exc
        raise InferenceError(f"the endpoint cannot be reached: {exc.reason}") from exc
    except InferenceError:
        raise
    except (OSError, ValueError) as exc:
        raise InferenceError(f"the call to the endpoint failed: {type(exc).__name__}: {exc}") from exc


def _check_output(n: int, item, labels: Sequence[str]) -> dict:
    if not isinstance(item, dict):
        raise InferenceError(f"output {n} is not a JSON object")
    label = item.get("label")
    if not isinstance(label, str) or label not in labels:
        raise InferenceError(f"output {n} has label {label!r}, not one of the task's labels {list(labels)}")
    probabilities = item.get("probabilities")
    if not isinstance(probabilities, dict) or set(probabilities) != set(labels):
        keys = sorted(probabilities) if isinstance(probabilities, dict) else probabilities
        raise InferenceError(
            f"output {n} has probabilities for {keys!r}; expected one per task label {sorted(labels)}"
        )
    scores = {}
    for key in labels:
        value = probabilities[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InferenceError(f"output {n}: probability of {key!r} is not a number ({value!r})")
        if not 0.0 <= value <= 1.0:
            raise InferenceError(f"output {n}: probability of {key!r} is {value}, outside [0, 1]")
        scores[key] = float(value)
    total = sum(scores.values())
    if abs(total - 1.0) > PROBABILITY_TOLERANCE:
        raise InferenceError(f"output {n}: probabilities sum to {total:.6g}, not 1")
    return {"label": label, "probabilities": scores}


def call_endpoint(
    url: str, secret: str, inputs: list[dict], *, labels: Sequence[str], timeout: float
) -> list[dict]:
    """POST ``inputs`` to a remote endpoint (signed, see the module docstring) and check its answer.

    Args:
        url: the endpoint's http(s) URL.
        secret: the model's signing secret.
        inputs: input dicts (field name -> text), sent as they are.
        labels: the task's labels; the answer must use exactly these.
        timeout: seconds for the whole call (connect, send, read).

    Returns:
        One ``{"label": str, "probabilities": {label: float}}`` per input, in order.

    Raises:
        InferenceError: unreachable, timeout, non-2xx, body over 1 MB, not JSON, no ``outputs`` list,
            wrong number of outputs, an unknown label, probabilities missing, out of range or not
            summing to 1.
    """
    if not inputs:
        return []
    if not url.lower().startswith(("http://", "https://")):
        raise InferenceError(f"endpoint URL {url!r} is not an http(s) URL")
    check_endpoint_url(url)  # again at every call: the name may resolve elsewhere since registration
    body = json.dumps({"inputs": inputs}, ensure_ascii=False).encode("utf-8")
    raw = _post(url, secret, body, timeout)
    try:
        answer = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        logger.warning("endpoint %s answered with no JSON: %r", url, raw[:300])
        raise InferenceError(f"the endpoint's answer is not JSON ({type(exc).__name__})") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("outputs"), list):
        raise InferenceError('the endpoint\'s answer has no "outputs" list')
    outputs = answer["outputs"]
    if len(outputs) != len(inputs):
        raise InferenceError(f"the endpoint returned {len(outputs)} outputs for {len(inputs)} inputs")
    return [_check_output(n, item, labels) for n, item in enumerate(outputs)]
