"""The name server's kvConfig.json holding bytes that are not UTF-8 (a hand edit saved as Latin-1) is an
unreadable file as any other: its ``.bak`` is read, and with no usable ``.bak`` the start is refused with a
NamesrvConfigError naming the file (``rocketstore namesrv`` prints it and exits 2).  The decode ran outside
the parse's error handling: a bare UnicodeDecodeError escaped (a traceback), the ``.bak`` never read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.namesrv import NamesrvConfigError
from rocketstore.namesrv.handlers import KVTable

GOOD = json.dumps({"configTable": {"ORDER_TOPIC_CONFIG": {"TopicA": "broker-a:4"}}})
LATIN_1 = '{"configTable": {"ns": {"k": "caf\u00e9"}}}'.encode("latin-1")


def test_a_kv_file_that_is_not_utf8_reads_the_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(LATIN_1)
    (tmp_path / "kvConfig.json.bak").write_text(GOOD, encoding="utf-8")
    assert KVTable(str(path)).get("ORDER_TOPIC_CONFIG", "TopicA") == "broker-a:4"


def test_a_kv_file_that_is_not_utf8_without_a_bak_refuses_to_load(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(LATIN_1)
    with pytest.raises(NamesrvConfigError, match="kvConfig.json"):
        KVTable(str(path))
    assert path.read_bytes() == LATIN_1
