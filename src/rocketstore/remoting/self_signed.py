"""A throwaway self-signed certificate for ``tls.test.mode.enable`` (4.9.3's TLS test mode), made without a
dependency: Python's ssl module loads certificates but cannot make one, the ``cryptography`` package is
not a dependency, and the product does not shell out to openssl.

What it makes: an EC P-256 key pair (the secret scalar drawn with :mod:`secrets`) and an X.509 v1
certificate for it, self-signed with ECDSA-SHA256, both in PEM (the key as SEC1 "EC PRIVATE KEY").  OpenSSL
does the TLS handshakes with them; the code here only computes the public key and the one signature, once,
when a server starts.  Nothing depends on the certificate for security: test-mode clients check nothing
(the point of test mode), so the certificate proves nothing about the server either way; the key only has
to be valid and secret, and ECDHE gives each connection its own keys.

Pure: no I/O, no clock (the caller gives the validity start).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import datetime, timedelta
from typing import NamedTuple

__all__ = ["SelfSigned", "make_self_signed", "on_curve"]

# NIST P-256 (SEC 2 secp256r1): y^2 = x^3 - 3x + b over GF(p), base point G of prime order n
_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_G = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
      0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)

_Point = tuple[int, int] | None  # None: the point at infinity


def _add(p1: _Point, p2: _Point) -> _Point:
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2:
        if (y1 + y2) % _P == 0:
            return None
        slope = (3 * x1 * x1 - 3) * pow(2 * y1, -1, _P) % _P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, _P) % _P
    x3 = (slope * slope - x1 - x2) % _P
    return x3, (slope * (x1 - x3) - y1) % _P


def _multiply(k: int, point: _Point) -> _Point:
    """k * point by a Montgomery ladder (the same steps for every bit of k)."""
    low, high = None, point
    for i in reversed(range(k.bit_length())):
        if (k >> i) & 1:
            low, high = _add(low, high), _add(high, high)
        else:
            low, high = _add(low, low), _add(low, high)
    return low


def on_curve(point: _Point) -> bool:
    """Whether *point* lies on P-256."""
    if point is None:
        return True
    x, y = point
    return (y * y - (x * x * x - 3 * x + _B)) % _P == 0


# --- DER --------------------------------------------------------------------------------------------------

def _tlv(tag: int, value: bytes) -> bytes:
    n = len(value)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + value


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _int(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))  # a leading 0 keeps it positive


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    out = bytearray([40 * parts[0] + parts[1]])
    for part in parts[2:]:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.append(0x80 | (part & 0x7F))
            part >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def _bits(value: bytes) -> bytes:
    return _tlv(0x03, b"\x00" + value)


def _time(when: datetime) -> bytes:
    if 1950 <= when.year < 2050:
        return _tlv(0x17, when.strftime("%y%m%d%H%M%SZ").encode())  # UTCTime
    return _tlv(0x18, when.strftime("%Y%m%d%H%M%SZ").encode())  # GeneralizedTime


_EC_PUBLIC_KEY = "1.2.840.10045.2.1"
_PRIME256V1 = "1.2.840.10045.3.1.7"
_ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2"
_COMMON_NAME = "2.5.4.3"


def _pem(label: str, der: bytes) -> bytes:
    text = base64.b64encode(der).decode()
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    return (f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n").encode()


class SelfSigned(NamedTuple):
    """A certificate and its private key, PEM."""

    cert_pem: bytes
    key_pem: bytes


def _sign(secret: int, message: bytes) -> bytes:
    """ECDSA-SHA256 signature of *message*, DER (r, s)."""
    z = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = secrets.randbelow(_N - 1) + 1
        point = _multiply(k, _G)
        assert point is not None
        r = point[0] % _N
        s = pow(k, -1, _N) * (z + r * secret) % _N
        if r and s:
            return _seq(_int(r), _int(s))


def make_self_signed(common_name: str, not_before: datetime, valid_for: timedelta) -> SelfSigned:
    """A fresh key pair and a certificate for it with subject and issuer ``CN=common_name``, valid from
    *not_before* (UTC) for *valid_for*."""
    secret = secrets.randbelow(_N - 1) + 1
    public = _multiply(secret, _G)
    assert public is not None and on_curve(public)
    point = b"\x04" + public[0].to_bytes(32, "big") + public[1].to_bytes(32, "big")
    name = _seq(_tlv(0x31, _seq(_oid(_COMMON_NAME), _tlv(0x0C, common_name.encode()))))
    algorithm = _seq(_oid(_ECDSA_WITH_SHA256))
    tbs = _seq(_int(secrets.randbits(63) | 1 << 62), algorithm, name,
               _seq(_time(not_before), _time(not_before + valid_for)), name,
               _seq(_seq(_oid(_EC_PUBLIC_KEY), _oid(_PRIME256V1)), _bits(point)))
    cert = _seq(tbs, algorithm, _bits(_sign(secret, tbs)))
    key = _seq(_int(1), _tlv(0x04, secret.to_bytes(32, "big")), _tlv(0xA0, _oid(_PRIME256V1)),
               _tlv(0xA1, _bits(point)))
    return SelfSigned(_pem("CERTIFICATE", cert), _pem("EC PRIVATE KEY", key))
