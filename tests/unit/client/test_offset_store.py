"""LocalFileOffsetStore: a JSON table written atomically, merged with what the file holds, and a typed
error for a file that is not an offset table."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rocketstore.client.offset_store import LocalFileOffsetStore, OffsetStoreError
from rocketstore.client.route import MessageQueue

A = MessageQueue("T", "broker-a", 0)
B = MessageQueue("T", "broker-a", 1)


def test_offsets_survive_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "client" / "group" / "offsets.json"

    async def go() -> None:
        store = LocalFileOffsetStore(path)
        await store.load()
        assert store.read_memory(A) == -1 and await store.read_store(A) == -1
        store.update(A, 5, increase_only=False)
        store.update(A, 3, increase_only=True)  # never backwards when increase_only
        store.update(B, 9, increase_only=False)
        await store.persist([A, B])
        store.update(B, 12, increase_only=True)
        await store.persist([B])  # A keeps its persisted offset
        again = LocalFileOffsetStore(path)
        await again.load()
        assert again.read_memory(A) == 5 and again.read_memory(B) == 12
        assert await again.read_store(B) == 12

    asyncio.run(go())
    # 4.9.3's LocalFileOffsetStore form (fastjson, the queues as object keys), which the Java client reads
    assert path.read_text() == ('{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:5,'
                                '{"brokerName":"broker-a","queueId":1,"topic":"T"}:12}}')
    assert path.with_name("offsets.json.bak").read_text() == (  # the previous table, as Java's string2File
        '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:5,'
        '{"brokerName":"broker-a","queueId":1,"topic":"T"}:9}}')
    assert sorted(p.name for p in path.parent.iterdir()) == ["offsets.json", "offsets.json.bak"], \
        "no temporary file left"


def test_a_file_in_the_plain_json_form_earlier_versions_wrote_is_read(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"offsetTable": [{"topic": "T", "brokerName": "broker-a", "queueId": 0,
                                                 "offset": 7}]}))

    async def go() -> None:
        store = LocalFileOffsetStore(path)
        await store.load()
        assert store.read_memory(A) == 7

    asyncio.run(go())


@pytest.mark.parametrize("text", ["not json", "[]", '{"offsetTable": [{"topic": "T"}]}', '{"x": 1}'])
def test_a_file_that_is_not_an_offset_table_is_a_typed_error_and_is_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / "offsets.json"
    path.write_text(text)
    with pytest.raises(OffsetStoreError) as info:
        asyncio.run(LocalFileOffsetStore(path).load())
    assert info.value.path == str(path)
    assert path.read_text() == text
