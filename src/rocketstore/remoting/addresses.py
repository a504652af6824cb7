"""Addresses as RocketMQ writes them (``host:port``, ``[v6]:port``, ``;``-separated name server lists) and
the dual-stack listening socket a server binds for the wildcard address ``::``.

Re-exported by :mod:`rocketstore.remoting.transport`.  A transport module (:func:`dual_stack_listener`
makes a socket); the parsing is pure.
"""

from __future__ import annotations

import socket

__all__ = ["dual_stack_listener", "namesrv_addresses", "split_address"]


def dual_stack_listener(host: str, port: int, backlog: int = 1024) -> socket.socket | None:
    """For *host* ``::``, a socket listening on *port* of every IPv6 and IPv4 address (IPv4 peers show as
    IPv4-mapped addresses), as a Java server bound to the wildcard address accepts both; None for any other
    host (bind that host itself) or where the platform has no dual-stack sockets."""
    if host != "::" or not socket.has_dualstack_ipv6():
        return None
    return socket.create_server((host, port), family=socket.AF_INET6, backlog=backlog, dualstack_ipv6=True)


def namesrv_addresses(text: str) -> tuple[list[str], str | None]:
    """The ``;``-separated name server addresses of *text* (blanks trimmed, empty parts dropped) and the first
    that is no ``HOST:PORT`` with a port from 1 to 65535, or None."""
    parts = [p.strip() for p in text.split(";") if p.strip()]
    for part in parts:
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdecimal() or not 0 < int(port) < 65536:
            return parts, part
    return parts, None


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` / ``"[v6]:port"`` -> (host, port); ProtocolError-free ValueError on junk, a port past
    65535 included (4.9.3's InetSocketAddress refuses it; the socket calls raise OverflowError for it)."""
    text = address.strip()
    if text.startswith("[") and "]:" in text:
        host, _, port_text = text[1:].rpartition("]:")
    else:
        host, _, port_text = text.rpartition(":")
    if not host or not port_text.isdecimal() or not int(port_text) <= 65535:
        raise ValueError(f"address {address!r} is not host:port")
    return host, int(port_text)
