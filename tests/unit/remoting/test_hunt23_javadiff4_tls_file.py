"""A tls.properties file read as broker.conf is: one that is not UTF-8 (a comment saved as Latin-1 by an
editor, which 4.9.3's Properties.load(InputStream) reads as ISO-8859-1) is a TlsConfigError naming the file
and the byte, which the CLI prints as one error line; it was a UnicodeDecodeError with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.remoting.tls import TlsConfig, TlsConfigError, TlsMode


def test_a_tls_file_that_is_not_utf8_is_a_tls_config_error(tmp_path: Path) -> None:
    path = tmp_path / "tls.properties"
    path.write_bytes(b"tls.server.mode=disabled\ntls.server.keyPassword=cl\xe9\n")
    expected = r"tls\.properties: not UTF-8 text \(invalid continuation byte at byte 50\)"
    with pytest.raises(TlsConfigError, match=expected):
        TlsConfig.from_file(str(path))


def test_a_tls_file_whose_comments_are_not_utf8_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tls.properties"
    path.write_bytes(b"# cl\xe9 priv\xe9e\ntls.server.mode=disabled\n")  # a Latin-1 editor's remark
    assert TlsConfig.from_file(str(path)).server_mode is TlsMode.DISABLED


def test_a_tls_file_with_a_byte_order_mark_reads_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "tls.properties"
    path.write_bytes("\ufefftls.server.mode=disabled\ntls.test.mode.enable=true\n".encode())
    config = TlsConfig.from_file(str(path))
    assert config.server_mode is TlsMode.DISABLED and config.test_mode


def test_a_missing_tls_file_is_still_a_tls_config_error(tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match="cannot read the TLS config"):
        TlsConfig.from_file(str(tmp_path / "absent.properties"))
