"""Who is calling: the address the per-caller limits count by (:mod:`service.limits`).

A caller is the host of the connection's peer (``context.peer()``, without its port): an IPv4
address, or for IPv6 its /64 network (one subscriber usually holds a whole /64, so counting by
/128 would let one client act as billions). Behind a proxy every caller would look like the
proxy, so a header in which proxies pass on the client's address can be trusted
(``trusted_proxy_header``, for example ``x-forwarded-for``: a comma-separated list to which
each proxy appends the address it saw), but only when the peer is one of the
``trusted_proxies`` networks. The caller is then the right-most address of the list that is
not a trusted proxy: the entries to its left were written by the client itself and prove
nothing. Without the setting the header is ignored, so a client cannot choose its address.

The servicer resolves the caller of each call and puts it in :data:`CALLER` for the app.
"""

from __future__ import annotations

import contextvars
import ipaddress
from collections.abc import Iterable
from urllib.parse import unquote

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("tute_caller", default="local")
"""The address of the current call's caller (see :func:`caller_key`); ``local`` outside a
call (the app used directly)."""

IPV6_PREFIX = 64


def parse_networks(text: str) -> tuple[IPNetwork, ...]:
    """Comma-separated CIDRs (``10.0.0.0/8,::1``); a bad one is a ValueError naming it."""
    nets: list[IPNetwork] = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        try:
            nets.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"not a network (CIDR): {part!r}") from None
    return tuple(nets)


def parse_host(text: str) -> IPAddress | None:
    """The address of ``1.2.3.4``, ``1.2.3.4:5678``, ``::1``, ``[::1]:5678``; None otherwise."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def peer_host(peer: str) -> IPAddress | None:
    """The address of a gRPC peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``, which
    may come percent-encoded); None for other kinds (``unix:``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    return parse_host(unquote(rest))


def caller_key(addr: IPAddress) -> str:
    """What the limits count by: the IPv4 address, or the /64 of an IPv6 one."""
    if isinstance(addr, ipaddress.IPv6Address):
        net = ipaddress.IPv6Network((addr, IPV6_PREFIX), strict=False)
        return str(net)
    return str(addr)


class CallerResolver:
    """The caller of a call from its peer and metadata, by the settings' proxy rules."""

    def __init__(self, header: str = "", trusted: str = "") -> None:
        self.header = header.strip().lower()
        self.trusted = parse_networks(trusted)

    def _is_trusted(self, addr: IPAddress) -> bool:
        return any(addr.version == net.version and addr in net for net in self.trusted)

    def caller(self, peer: str, metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
        """The caller's key (see :func:`caller_key`); ``peer`` itself when it is no address
        (a Unix socket's peer, say) and no trusted header names one."""
        addr = peer_host(peer)
        # a Unix socket's peer is a proxy on this machine
        trusted_peer = peer.startswith("unix:") if addr is None else self._is_trusted(addr)
        if not self.header or not trusted_peer:
            return caller_key(addr) if addr is not None else peer.partition(":")[0] or "unknown"
        hops = [
            hop
            for key, value in metadata or ()
            if key.lower() == self.header and isinstance(value, str)
            for hop in value.split(",")
        ]
        for hop in reversed(hops):
            found = parse_host(hop)
            if found is None:
                break  # not an address: believe nothing further left
            addr = found
            if not self._is_trusted(found):
                break
        return caller_key(addr) if addr is not None else peer.partition(":")[0] or "unknown"
