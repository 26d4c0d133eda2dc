"""Where a remote inference endpoint may be: never on this server's own networks.

The server POSTs to whatever URL an owner registers, so a URL on loopback, a private range or a
link-local metadata address would let anyone with admin access make the server call its own
neighbours (server-side request forgery). Such an address is refused unless the operator allows its
network (``DYNABENCH_ENDPOINT_ALLOWED_NETWORKS``). The check runs at registration and again before
each call, as a name may resolve elsewhere later; and the call itself connects only to an address it
checked (``connect_checked``), so a name that resolves to a public address for the check and to a
private one a moment later (DNS rebinding) is refused before any packet is sent there. The refusal
names the rule, never what was resolved.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from engine.config import settings
from engine.runtime.model_files import InferenceError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., list]

#: Each refused kind of address, in the order they are named.
RULES: tuple[tuple[str, Callable[[Address], bool]], ...] = (
    ("loopback", lambda a: a.is_loopback),
    ("link-local", lambda a: a.is_link_local),
    ("multicast", lambda a: a.is_multicast),
    ("unspecified", lambda a: a.is_unspecified),
    ("reserved", lambda a: a.is_reserved),
    # Last: Python counts 0.0.0.0/8 and 240.0.0.0/4 as private too; they are named by the rules above.
    ("private", lambda a: a.is_private),
)


class EndpointAddressRefused(InferenceError):
    """The endpoint's host is, or resolves to, an address remote endpoints may not use."""


def refused_kind(address: Address, allowed: Iterable[str] = ()) -> str | None:
    """The rule ``address`` breaks ("loopback", "private"...), or None when an endpoint may use it.

    An IPv4 address written as IPv6 (``::ffff:127.0.0.1``) is judged as the IPv4 address. Networks in
    ``allowed`` (CIDR strings) are exempt.
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in ipaddress.ip_network(net, strict=False) for net in allowed):
        return None
    return next((name for name, breaks in RULES if breaks(address)), None)


def check_endpoint_url(url: str, *, resolve: Resolver | None = None) -> None:
    """Refuse ``url`` unless every address its host resolves to may be used by a remote endpoint.

    ``resolve`` defaults to ``socket.getaddrinfo``, looked up at call time (tests stub it, so no lookup
    leaves the machine).

    Raises:
        EndpointAddressRefused: no host, a host that does not resolve, or one address that breaks a
            rule (``refused_kind``); the message names the rule and the setting that allows it.
    """
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise EndpointAddressRefused("the endpoint URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = (resolve or socket.getaddrinfo)(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:
        raise EndpointAddressRefused("the endpoint's host name cannot be resolved") from exc
    allowed = _allowed()
    for info in infos:
        kind = refused_kind(_address_of(info), allowed)
        if kind is not None:
            raise _refusal(kind)


def _allowed() -> list[str]:
    return list(getattr(settings, "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS", []) or [])


def _address_of(info) -> Address:
    return ipaddress.ip_address(info[4][0].split("%", 1)[0])  # drop an IPv6 zone ("%eth0")


def _refusal(kind: str) -> EndpointAddressRefused:
    return EndpointAddressRefused(
        f"the endpoint's host is on a {kind} address, which remote endpoints may not use "
        "(the operator can allow its network with DYNABENCH_ENDPOINT_ALLOWED_NETWORKS)"
    )


def connect_checked(host: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to ``host``:``port`` made to an address checked by the rule, never another.

    Resolves ``host`` once (``socket.getaddrinfo``, looked up at call time), refuses the whole host if
    any address breaks a rule, then connects to those addresses in order (``socket.create_connection``
    on the numeric address, also looked up at call time) until one answers.

    Raises:
        EndpointAddressRefused: the host does not resolve, or an address breaks a rule (before any
            connection is attempted).
        OSError: no address accepted the connection (refused, unreachable, timed out).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise EndpointAddressRefused("the endpoint's host name cannot be resolved") from exc
    allowed = _allowed()
    addresses = [_address_of(info) for info in infos]
    for address in addresses:
        kind = refused_kind(address, allowed)
        if kind is not None:
            raise _refusal(kind)
    last_error: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((str(address), port), timeout=timeout)
        except OSError as exc:
            last_error = exc
    raise last_error or OSError("the endpoint's host has no address")
