"""Throwaway certificates for TLS tests, made with the machine's openssl (a test tool, not the product's)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed(directory: Path, name: str) -> tuple[str, str]:
    """A self-signed RSA certificate for ``CN=name`` and its unencrypted key, as files in *directory*:
    (certificate path, key path)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    f"/CN={name}", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)
