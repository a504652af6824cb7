"""Socket addresses as they appear in records and message ids: IP bytes (4 or 16) plus a port.

Text form follows Java's ``InetSocketAddress`` rendering used in RocketMQ dumps: ``1.2.3.4:10911`` and
``[2001:db8:0:0:0:0:0:1]:5555`` (IPv6 groups in lower-case hex without zero compression).  IPv4-mapped IPv6
addresses collapse to IPv4, as Java does, because RocketMQ clients only decode the 4-byte layout.

Imports only :mod:`rocketstore.errors`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from rocketstore.errors import MessageError

__all__ = ["HostAddress", "parse_host"]


@dataclass(frozen=True, slots=True)
class HostAddress:
    """An IP address (packed, 4 or 16 bytes) and a port."""

    ip: bytes
    port: int

    def __post_init__(self) -> None:
        if len(self.ip) not in (4, 16):
            raise MessageError(f"an IP address has 4 or 16 bytes, not {len(self.ip)}")
        if not 0 <= self.port <= 0xFFFF:
            raise MessageError(f"port {self.port} out of range")

    @property
    def is_v6(self) -> bool:
        return len(self.ip) == 16

    def ip_text(self) -> str:
        if len(self.ip) == 4:
            return ".".join(str(b) for b in self.ip)
        groups = [int.from_bytes(self.ip[i : i + 2], "big") for i in range(0, 16, 2)]
        return ":".join(f"{g:x}" for g in groups)

    def __str__(self) -> str:
        if len(self.ip) == 4:
            return f"{self.ip_text()}:{self.port}"
        return f"[{self.ip_text()}]:{self.port}"


_HOST_CACHE: dict[str, HostAddress] = {}


def parse_host(text: str | HostAddress | tuple[str, int]) -> HostAddress:
    """Parse ``ip:port`` / ``[v6]:port`` text or an ``(ip, port)`` tuple (as asyncio reports peers)."""
    if isinstance(text, HostAddress):
        return text
    if isinstance(text, tuple):
        host, port = text[0], int(text[1])
    else:
        cached = _HOST_CACHE.get(text)
        if cached is not None:
            return cached
        if text.startswith("["):
            end = text.find("]")
            if end < 0 or text[end + 1 : end + 2] != ":":
                raise MessageError(f"cannot parse host address {text!r}")
            host, port_text = text[1:end], text[end + 2 :]
        else:
            host, sep, port_text = text.rpartition(":")
            if not sep:
                raise MessageError(f"cannot parse host address {text!r}: no port")
        try:
            port = int(port_text)
        except ValueError as exc:
            raise MessageError(f"cannot parse host address {text!r}: bad port") from exc
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError as exc:
        raise MessageError(f"cannot parse host address {text!r}") from exc
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    result = HostAddress(ip.packed, port)
    if isinstance(text, str) and len(_HOST_CACHE) < 4096:
        _HOST_CACHE[text] = result
    return result
