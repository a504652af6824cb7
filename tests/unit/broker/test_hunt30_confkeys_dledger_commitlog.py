"""enableDLegerCommitLog=true over a store 4.9.3 wrote in DLedger mode: the start is refused, the key named.

4.9.3 (DLedgerCommitLog) then writes each message to ``<storePathRootDir>/dledger-<dLegerSelfId>/data``, the
message wrapped in a DLedger entry (a 48-byte header: magic, size, index, term, pos, channel, two CRCs, the
body's length), and its consume queues point into those files.  This broker only warned that the key "acts
on nothing", opened the plain commitlog (empty, or the messages from before the switch), dropped every
consume-queue entry pointing past it and would write new messages over the offsets DLedger holds.  A DLedger
log with nothing written yet loses nothing (4.9.3 takes a plain commitlog as the one from before its switch):
that start goes on, with the old warning."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from rocketstore import StoreConfig
from rocketstore.broker import Broker, BrokerConfig
from rocketstore.errors import StoreConfigError

DLEDGER = {"enableDLegerCommitLog": "true", "dLegerGroup": "b", "dLegerPeers": "n0-127.0.0.1:40911",
           "dLegerSelfId": "n0"}


def _dledger_entry(body: bytes) -> bytes:
    # magic (any non-zero one), size, index, term, pos, channel, chain CRC, body CRC, body length
    return struct.pack(">iiqqqiiii", 0x1234, 48 + len(body), 0, 0, 0, 0, 0, 0, len(body)) + body


def _start_and_close(root: Path, properties: dict[str, str]) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1"),
                        StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20),
                        properties=properties)
        try:
            await broker.start()
        finally:
            await broker.close()
    asyncio.run(main())


def _segment(root: Path, content: bytes) -> Path:
    data = root / "dledger-n0" / "data"
    data.mkdir(parents=True)
    segment = data / ("0" * 20)
    segment.write_bytes(content.ljust(4096, b"\0"))
    return data


def test_a_written_dledger_log_refuses_the_start(tmp_path: Path) -> None:
    root = tmp_path / "store"
    data = _segment(root, _dledger_entry(b"a commitlog message would be here"))
    with pytest.raises(StoreConfigError) as err:
        _start_and_close(root, DLEDGER)
    assert "enableDLegerCommitLog" in str(err.value) and str(data) in str(err.value)
    assert not (root / "commitlog").exists()  # nothing opened
    # the self id may be left out: any dledger-* log counts
    with pytest.raises(StoreConfigError, match="enableDLegerCommitLog"):
        _start_and_close(root, {"enableDLegerCommitLog": "TRUE"})


def test_an_unwritten_log_or_the_flag_off_starts(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _segment(root, b"")
    _start_and_close(root, DLEDGER)  # nothing in DLedger's log: nothing to lose
    written = tmp_path / "other"
    _segment(written, _dledger_entry(b"m"))
    _start_and_close(written, {**DLEDGER, "enableDLegerCommitLog": "false"})  # as 4.9.3: the plain commitlog
