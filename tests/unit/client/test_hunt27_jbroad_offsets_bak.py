"""A broadcasting consumer's offsets file that is missing while its ``.bak`` is there is read from the
``.bak``.

4.9.3's client replaces ``offsets.json`` by writing ``offsets.json.tmp``, copying the old file to
``offsets.json.bak``, deleting ``offsets.json`` and only then renaming the ``.tmp`` in: a crash between the
delete and the rename leaves no ``offsets.json``.  Its LocalFileOffsetStore reads the ``.bak`` then (a missing
file reads as no content, which goes to the ``.bak`` as an empty one does).  A Python consumer taking over
that directory started over instead, at the queues' end by default, and skipped everything since.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketstore.client.offset_store import LocalFileOffsetStore, OffsetStoreError
from rocketstore.client.route import MessageQueue

#: what a 4.9.3 push consumer (BROADCASTING, instance b0) left in offsets.json.bak, captured from 4.9.3
JAVA_BAK = (
    '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"BcT"\n'
    '\t\t}:2,{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,\n\t\t\t"topic":"BcT"\n\t\t}:2\n\t}\n}'
)
Q0, Q1 = MessageQueue("BcT", "broker-a", 0), MessageQueue("BcT", "broker-a", 1)


def _crashed_dir(tmp_path: Path) -> Path:
    """The directory a 4.9.3 client crashed in between its delete and its rename."""
    path = tmp_path / "192.0.2.2@b0" / "gC" / "offsets.json"
    path.parent.mkdir(parents=True)
    (path.parent / "offsets.json.bak").write_text(JAVA_BAK)
    (path.parent / "offsets.json.tmp").write_text(JAVA_BAK.replace("}:2", "}:4"))
    return path


def test_a_missing_file_is_read_from_its_bak(tmp_path: Path) -> None:
    path = _crashed_dir(tmp_path)

    async def go() -> None:
        store = LocalFileOffsetStore(path)
        await store.load()
        assert store.table == {Q0: 2, Q1: 2}
        assert await LocalFileOffsetStore(path).read_store(Q1) == 2
        # the next write keeps the .bak's queues and puts offsets.json back
        store.update(Q0, 3, increase_only=True)
        await store.persist([Q0])
        again = LocalFileOffsetStore(path)
        await again.load()
        assert again.table == {Q0: 3, Q1: 2}
        assert path.is_file()

    asyncio.run(go())


def test_no_file_and_no_bak_is_a_fresh_start(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path / "offsets.json")
    asyncio.run(store.load())
    assert store.table == {}
    assert asyncio.run(store.read_store(Q0)) == -1


def test_a_missing_file_and_a_bad_bak_are_a_typed_error(tmp_path: Path) -> None:
    """4.9.3: MQClientException ("readLocalOffset Exception") from load, so the consumer does not start."""
    (tmp_path / "offsets.json.bak").write_text("{\n\t\"offsetTable\":{{")
    with pytest.raises(OffsetStoreError):
        asyncio.run(LocalFileOffsetStore(tmp_path / "offsets.json").load())
