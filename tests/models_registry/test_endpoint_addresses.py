"""Remote endpoints may not be on this server's own networks (server-side request forgery).

Every case runs on a stubbed resolver: the host names below resolve to the addresses given here, and
nothing connects anywhere. Only the loopback endpoint of test_remote_endpoint.py is ever called.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from engine.endpoints import calls as endpoints
from engine.endpoints.addresses import EndpointAddressRefused, check_endpoint_url, refused_kind
from engine.runtime.classifier import InferenceError
from models_registry.inference import predict
from models_registry.models import RegisteredModel
from models_registry.services import ModelRegistryError, register_endpoint_model


def resolving_to(*addresses: str):
    """A stand-in for ``socket.getaddrinfo`` that answers ``addresses`` for any host."""

    def resolve(host, port, type=0, **kwargs):
        family = lambda a: socket.AF_INET6 if ":" in a else socket.AF_INET  # noqa: E731
        return [(family(a), socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),  # the cloud metadata address
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("93.184.215.14", None),
        ("2606:4700::1111", None),
    ],
)
def test_the_rule_each_address_breaks(address, kind):
    assert refused_kind(ipaddress.ip_address(address)) == kind


def test_an_allowed_network_is_exempt_and_only_it():
    assert refused_kind(ipaddress.ip_address("10.1.2.3"), ["10.0.0.0/8"]) is None
    assert refused_kind(ipaddress.ip_address("192.168.1.1"), ["10.0.0.0/8"]) == "private"


def test_a_host_with_one_refused_address_among_public_ones_is_refused(settings):
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    with pytest.raises(EndpointAddressRefused) as caught:
        check_endpoint_url("https://model.example/predict", resolve=resolving_to("93.184.215.14", "10.0.0.7"))
    message = str(caught.value)
    assert message == (
        "the endpoint's host is on a private address, which remote endpoints may not use "
        "(the operator can allow its network with DYNABENCH_ENDPOINT_ALLOWED_NETWORKS)"
    )
    assert "10.0.0.7" not in message and "model.example" not in message  # the rule, not the content
    check_endpoint_url("https://model.example/predict", resolve=resolving_to("93.184.215.14"))


def test_a_host_that_does_not_resolve_is_refused(settings):
    def fail(*args, **kwargs):
        raise socket.gaierror("no such name")

    with pytest.raises(EndpointAddressRefused, match="cannot be resolved"):
        check_endpoint_url("https://nowhere.example/", resolve=fail)
    with pytest.raises(EndpointAddressRefused, match="has no host"):
        check_endpoint_url("http:///predict", resolve=resolving_to("93.184.215.14"))


def test_registration_refuses_a_url_on_a_metadata_address(settings, monkeypatch, hate_task, owner):
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("169.254.169.254"))
    with pytest.raises(ModelRegistryError, match="on a link-local address"):
        register_endpoint_model(
            task=hate_task, name="sneaky", url="http://metadata.example/latest", owner=owner
        )
    assert not RegisteredModel.objects.exists()


def test_loopback_is_refused_unless_allowed(settings, hate_task, owner):
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    with pytest.raises(ModelRegistryError, match="on a loopback address"):
        register_endpoint_model(task=hate_task, name="local", url="http://127.0.0.1:9/predict", owner=owner)


def test_each_call_checks_again_and_connects_nowhere_when_the_name_moved(settings, monkeypatch, hate_task):
    """Registered while its name resolved to a public address; now it resolves to a private one."""
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    model = RegisteredModel.objects.create(
        task=hate_task,
        name="moved",
        source=RegisteredModel.Source.ENDPOINT,
        endpoint_url="https://model.example/predict",
        endpoint_secret="s3cret",
        status=RegisteredModel.Status.READY,
    )
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("192.168.0.20"))

    def no_connection(*args, **kwargs):
        raise AssertionError("no request may be sent")

    monkeypatch.setattr(endpoints, "_post", no_connection)
    with pytest.raises(InferenceError, match="on a private address"):
        predict(model, [{"statement": "hello"}])


def test_a_name_that_rebinds_after_the_check_is_refused_before_any_connection(
    settings, monkeypatch, hate_task
):
    """DNS rebinding: the check before the call sees an allowed address, the connection's own lookup a
    private one. The connection goes only to an address it checked itself, so nothing is sent."""
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    model = RegisteredModel.objects.create(
        task=hate_task,
        name="rebinding",
        source=RegisteredModel.Source.ENDPOINT,
        endpoint_url="http://rebinding.example:8080/predict",
        endpoint_secret="s3cret",
        status=RegisteredModel.Status.READY,
    )
    answers = iter([resolving_to("127.0.0.1"), resolving_to("10.0.0.7")])
    lookups = []

    def rebinding(host, port, type=0, **kwargs):
        lookups.append(host)
        return next(answers)(host, port, type=type)

    connections = []

    def guarded_connect(address, timeout=None, **kwargs):
        connections.append(address)
        raise AssertionError(f"no connection may be made, not even to {address}")

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(socket, "create_connection", guarded_connect)
    with pytest.raises(InferenceError, match="on a private address"):
        predict(model, [{"statement": "hello"}])
    assert lookups == ["rebinding.example", "rebinding.example"]  # the check, then the connection's own
    assert connections == []


def test_the_connection_goes_to_the_checked_address_by_number(settings, monkeypatch):
    """connect_checked connects to the numeric address it judged, not to the name again."""
    from engine.endpoints.addresses import connect_checked

    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("127.0.0.9"))
    seen = []

    def fake_connect(address, timeout=None, **kwargs):
        seen.append((address, timeout))
        return "socket"

    monkeypatch.setattr(socket, "create_connection", fake_connect)
    assert connect_checked("models.example", 8080, 2.5) == "socket"
    assert seen == [(("127.0.0.9", 8080), 2.5)]
