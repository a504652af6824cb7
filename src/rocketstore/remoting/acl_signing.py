"""RocketMQ 4.9.3 plain-ACL request signing, sans-IO: what a client adds to a request's extFields and what a
broker recomputes to check it (shared/spec/acl.md section 3).

The signed content is the values of the signed fields sorted by key (Java's TreeMap: UTF-16 code-unit
order, which differs from Python's str order only between a character past U+FFFF and one in
U+E000..U+FFFF), concatenated without separators and encoded UTF-8 (an unpaired surrogate, in a value or
in the secret key, as "?"), followed by the request body.  The signature is Base64(HMAC-SHA1(secretKey,
content)) in the standard alphabet with padding.  A client signs AccessKey (and SecurityToken when it has
one) with its header's fields; a broker signs every extField it received except Signature and
``_UNIQUE_KEY_QUERY``, which are the same set.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

__all__ = ["ACCESS_KEY", "SECURITY_TOKEN", "SIGNATURE", "UNSIGNED_FIELDS", "sign", "sign_ext_fields",
           "signing_content"]

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: extFields a broker leaves out of the content it checks (the signature itself, and the flag a client
#: adds to a query by unique key after signing)
UNSIGNED_FIELDS = frozenset({SIGNATURE, "_UNIQUE_KEY_QUERY"})


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def signing_content(fields: Mapping[str, str], body: bytes | None = None) -> bytes:
    """The bytes a signature covers: *fields*' values in key order (minus UNSIGNED_FIELDS), then *body*."""
    keys = sorted(fields)
    if not all(k.isascii() for k in keys):
        keys.sort(key=_utf16_order)
    text = "".join(fields[k] for k in keys if k not in UNSIGNED_FIELDS)
    content = text.encode("utf-8", "replace")  # an unpaired surrogate becomes "?", as Java's getBytes(UTF_8)
    return content + body if body else content


def sign(secret_key: str, content: bytes) -> str:
    """Base64(HMAC-SHA1(secret_key, content)), as AclSigner computes it."""
    digest = hmac.new(secret_key.encode("utf-8", "replace"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign_ext_fields(ext_fields: Mapping[str, str], body: bytes | None, access_key: str, secret_key: str,
                    security_token: str | None = None) -> dict[str, str]:
    """*ext_fields* plus AccessKey (and SecurityToken) and the Signature over all of them and *body*: what
    a Java client's AclClientRPCHook sends."""
    signed = dict(ext_fields)
    signed[ACCESS_KEY] = access_key
    if security_token:
        signed[SECURITY_TOKEN] = security_token
    signed.pop(SIGNATURE, None)
    signed[SIGNATURE] = sign(secret_key, signing_content(signed, body))
    return signed
