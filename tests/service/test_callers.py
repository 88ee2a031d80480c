"""Who a caller is: peer strings, forwarded addresses and the trusted-proxy walk."""

from __future__ import annotations

import pytest

from service.callers import CallerResolver, parse_networks, peer_host


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("ipv4:127.0.0.1:50123", "127.0.0.1"),
        ("ipv6:[::1]:50123", "::1"),
        ("ipv6:%5B2001:db8::7%5D:443", "2001:db8::7"),
        ("ipv6:[::ffff:192.0.2.5]:443", "192.0.2.5"),
        ("unix:/run/tute.sock", None),
        ("garbage", None),
    ],
)
def test_the_host_of_a_grpc_peer(peer: str, host: str | None) -> None:
    found = peer_host(peer)
    assert (str(found) if found is not None else None) == host


def test_without_the_header_the_peer_is_the_caller_whatever_it_sends() -> None:
    plain = CallerResolver("", "0.0.0.0/0,::/0")
    assert plain.caller("ipv4:198.51.100.4:1", [("x-forwarded-for", "203.0.113.1")]) == (
        "198.51.100.4"
    )
    # IPv6 callers count by their /64
    assert plain.caller("ipv6:[2001:db8:a:b:1:2:3:4]:9", None) == "2001:db8:a:b::/64"
    assert plain.caller("unix:/run/tute.sock", None) == "unix"


def test_the_right_most_untrusted_forwarded_address_is_the_caller() -> None:
    r = CallerResolver("x-forwarded-for", "10.0.0.0/8,127.0.0.1")
    peer = "ipv4:127.0.0.1:5000"
    assert r.caller(peer, [("x-forwarded-for", "203.0.113.1")]) == "203.0.113.1"
    assert r.caller(peer, [("X-Forwarded-For", "6.6.6.6, 203.0.113.1, 10.0.0.2")]) == (
        "203.0.113.1"
    )
    # the list may come in several header values, in order
    assert r.caller(peer, [("x-forwarded-for", "6.6.6.6"), ("x-forwarded-for", "10.9.9.9")]) == (
        "6.6.6.6"
    )
    # only proxies on the path: the furthest one
    assert r.caller(peer, [("x-forwarded-for", "10.0.0.7, 10.0.0.8")]) == "10.0.0.7"
    # an entry that is no address: nothing further left is believed
    assert r.caller(peer, [("x-forwarded-for", "6.6.6.6, unknown, 10.0.0.8")]) == "10.0.0.8"
    assert r.caller(peer, [("x-forwarded-for", "203.0.113.1:4711")]) == "203.0.113.1"
    assert r.caller(peer, None) == "127.0.0.1"
    # a peer outside the trusted networks is the caller, whatever it forwards
    assert r.caller("ipv4:198.51.100.4:1", [("x-forwarded-for", "203.0.113.1")]) == ("198.51.100.4")


def test_bad_networks_are_named() -> None:
    with pytest.raises(ValueError, match="not-a-net"):
        parse_networks("10.0.0.0/8, not-a-net")
    assert len(parse_networks(" 10.0.0.0/8 ,, ::1 ")) == 2
