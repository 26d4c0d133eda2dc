"""Remote inference endpoints: signed requests to a loopback server, and every malformed answer refused."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.endpoints.calls import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    call_endpoint,
    sign,
    verify_signature,
)
from engine.runtime.classifier import InferenceError
from models_registry.inference import predict
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from models_registry.services import register_endpoint_model

LABELS = ["hateful", "not-hateful"]


def good_answer(inputs: list[dict]) -> dict:
    outputs = []
    for item in inputs:
        hateful = "hate" in item["statement"]
        p = 0.9 if hateful else 0.2
        outputs.append(
            {
                "label": "hateful" if hateful else "not-hateful",
                "probabilities": {"hateful": p, "not-hateful": 1 - p},
            }
        )
    return {"outputs": outputs}


class Endpoint:
    """A loopback HTTP endpoint on 127.0.0.1 (port chosen by the OS) that checks the signature.

    ``behaviour`` picks the answer: "good", "slow", "not-json", "wrong-length", "unknown-label",
    "bad-sum", "no-outputs", "error-500", "huge", "redirect".
    """

    def __init__(self) -> None:
        self.secret = ""
        self.behaviour = "good"
        self.requests: list[dict] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output quiet
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                timestamp = self.headers.get(TIMESTAMP_HEADER, "")
                signature = self.headers.get(SIGNATURE_HEADER, "")
                verified = verify_signature(endpoint.secret, timestamp, body, signature)
                endpoint.requests.append({"body": json.loads(body), "verified": verified})
                if not verified:
                    return self._send(401, b'{"error": "bad signature"}')
                inputs = json.loads(body)["inputs"]
                answer = good_answer(inputs)
                behaviour = endpoint.behaviour
                if behaviour == "slow":
                    time.sleep(1.5)
                elif behaviour == "not-json":
                    return self._send(200, b"<html>oops: secret-token-123</html>")
                elif behaviour == "wrong-length":
                    answer["outputs"].append(answer["outputs"][0])
                elif behaviour == "unknown-label":
                    answer["outputs"][0]["label"] = "spam"
                elif behaviour == "bad-sum":
                    answer["outputs"][0]["probabilities"] = {"hateful": 0.9, "not-hateful": 0.9}
                elif behaviour == "no-outputs":
                    answer = {"predictions": answer["outputs"]}
                elif behaviour == "error-500":
                    return self._send(500, b"internal error: db password is hunter2")
                elif behaviour == "huge":
                    return self._send(200, b'{"outputs": [' + b" " * 1_100_000 + b"]}")
                elif behaviour == "huge-no-length":  # HTTP/1.0: the body ends when the connection closes
                    self.send_response(200)
                    self.end_headers()
                    try:
                        for _ in range(20):
                            self.wfile.write(b" " * 100_000)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return None
                elif behaviour == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:1/")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self._send(200, json.dumps(answer).encode())

            def _send(self, status: int, payload: bytes):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/predict"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    server = Endpoint()
    yield server
    server.close()


@pytest.fixture
def endpoint_model(hate_task, owner, endpoint, django_capture_on_commit_callbacks):
    """A registered endpoint model whose probe (the check job, run inline) succeeded."""
    with django_capture_on_commit_callbacks(execute=True):
        model, secret = register_endpoint_model(
            task=hate_task, name="remote", url=endpoint.url, owner=owner, card={"description": "remote"}
        )
        endpoint.secret = secret
    model.refresh_from_db()
    return model


def test_signature_is_hmac_of_timestamp_and_body():
    import hashlib
    import hmac

    expected = hmac.new(b"s3cret", b"1700000000" + b'{"inputs": []}', hashlib.sha256).hexdigest()
    assert sign("s3cret", "1700000000", b'{"inputs": []}') == f"sha256={expected}"
    now = str(int(time.time()))
    assert verify_signature("k", now, b"body", sign("k", now, b"body"))
    assert not verify_signature("k", now, b"other", sign("k", now, b"body"))
    assert not verify_signature("other", now, b"body", sign("k", now, b"body"))
    assert not verify_signature("k", "1700000000", b"body", sign("k", "1700000000", b"body"))  # stale


def test_registration_generates_a_secret_and_the_probe_makes_it_ready(endpoint_model, endpoint):
    assert endpoint_model.status == RegisteredModel.Status.READY, endpoint_model.error_message
    assert endpoint_model.source == RegisteredModel.Source.ENDPOINT
    assert endpoint_model.parameter_count is None
    assert len(endpoint_model.endpoint_secret) >= 40
    assert endpoint.requests and all(r["verified"] for r in endpoint.requests)
    assert set(endpoint.requests[0]["body"]["inputs"][0]) == {"statement"}


def test_predict_calls_the_endpoint_signed(endpoint_model, endpoint):
    inputs = [{"statement": "I hate them", "extra": "not sent"}, {"statement": "I love cats 🐱"}]
    outputs = predict(endpoint_model, inputs)
    assert [o["label"] for o in outputs] == ["hateful", "not-hateful"]
    assert outputs[0]["probabilities"] == pytest.approx({"hateful": 0.9, "not-hateful": 0.1})
    last = endpoint.requests[-1]
    assert last["verified"]
    assert last["body"] == {"inputs": [{"statement": "I hate them"}, {"statement": "I love cats 🐱"}]}


def test_predict_batches_long_inputs(endpoint_model, endpoint):
    before = len(endpoint.requests)
    outputs = predict(endpoint_model, [{"statement": f"text {i}"} for i in range(70)])
    assert len(outputs) == 70
    assert len(endpoint.requests) - before == 3  # 32 + 32 + 6


def test_a_wrong_secret_is_refused_by_the_endpoint(endpoint_model, endpoint):
    endpoint_model.endpoint_secret = "not-the-secret"
    with pytest.raises(InferenceError, match="HTTP 401"):
        predict(endpoint_model, [{"statement": "hello"}])
    assert endpoint.requests[-1]["verified"] is False


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("not-json", "answer is not JSON"),
        ("wrong-length", "returned 2 outputs for 1 inputs"),
        ("unknown-label", "label 'spam', not one of the task's labels"),
        ("bad-sum", "probabilities sum to 1.8, not 1"),
        ("no-outputs", 'no "outputs" list'),
        ("error-500", "answered HTTP 500"),
        ("huge", "larger than 1,000,000 bytes"),
        ("huge-no-length", "larger than 1,000,000 bytes"),
        ("redirect", "redirects are not followed"),
    ],
)
def test_malformed_answers_raise_inference_error(endpoint_model, endpoint, behaviour, message):
    endpoint.behaviour = behaviour
    with pytest.raises(InferenceError, match=message) as caught:
        predict(endpoint_model, [{"statement": "hello"}])
    assert str(caught.value).startswith("model remote: ")
    # What the endpoint sent is logged, never handed back to the caller of predict.
    assert "hunter2" not in str(caught.value) and "secret-token-123" not in str(caught.value)


def test_timeout(settings, endpoint_model, endpoint):
    settings.DYNABENCH_ENDPOINT_TIMEOUT_SECONDS = 0.3
    endpoint.behaviour = "slow"
    started = time.monotonic()
    with pytest.raises(InferenceError, match=r"did not answer within 0.3 s \(timeout\)"):
        predict(endpoint_model, [{"statement": "hello"}])
    assert time.monotonic() - started < 1.2


def test_unreachable_endpoint():
    with pytest.raises(InferenceError, match="cannot be reached"):
        call_endpoint("http://127.0.0.1:1/", "k", [{"statement": "x"}], labels=LABELS, timeout=2)


def test_probe_failure_keeps_its_message(hate_task, owner, endpoint, django_capture_on_commit_callbacks):
    endpoint.behaviour = "unknown-label"
    with django_capture_on_commit_callbacks(execute=True):
        model, secret = register_endpoint_model(task=hate_task, name="broken", url=endpoint.url, owner=owner)
        endpoint.secret = secret
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message.startswith("probe input failed: ")
    assert "label 'spam'" in model.error_message


@pytest.mark.parametrize("url", ["ftp://example.org/x", "file:///etc/passwd", "not a url"])
def test_only_http_urls_are_registered(hate_task, owner, url):
    from models_registry.services import ModelRegistryError

    with pytest.raises(ModelRegistryError, match="not an http"):
        register_endpoint_model(task=hate_task, name="x", url=url, owner=owner)
    assert not RegisteredModel.objects.filter(name="x").exists()


def test_an_endpoint_model_can_be_a_round_target(endpoint_model, hate_round):
    from models_registry.selectors import target_models_for_round

    set_round_targets(round=hate_round, models=[endpoint_model])
    assert target_models_for_round(hate_round) == [endpoint_model]
