"""A broadcasting consumer's offsets file as 4.9.3's LocalFileOffsetStore writes it (fastjson, pretty
printed, a map keyed by MessageQueue objects: not plain JSON) sits at the same path rocketstore uses,
``<dir>/<client id>/<group>/offsets.json``.  A consumer that takes over from a Java one with the same
client id reads the Java offsets and goes on from them instead of refusing to start."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from rocketstore.client.offset_store import LocalFileOffsetStore, OffsetStoreError
from rocketstore.client.route import MessageQueue

#: what OffsetSerializeWrapper.toJson(true) writes (fastjson's PrettyFormat: tabs, object keys)
JAVA_FILE = (
    '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":3,\n\t\t\t"topic":"TopicTest"\n'
    '\t\t}:17,{\n\t\t\t"brokerName":"broker-b",\n\t\t\t"queueId":0,\n\t\t\t"topic":"TopicTest"\n\t\t}:0,{\n'
    '\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"%RETRY%g"\n\t\t}:1234567890123\n\t}\n}'
)


def test_a_file_written_by_the_java_client_is_read(tmp_path: Path) -> None:
    path = tmp_path / "10.0.0.1@inst" / "g" / "offsets.json"
    path.parent.mkdir(parents=True)
    path.write_text(JAVA_FILE)

    async def go() -> None:
        store = LocalFileOffsetStore(path)
        await store.load()
        assert store.read_memory(MessageQueue("TopicTest", "broker-a", 3)) == 17
        assert store.read_memory(MessageQueue("TopicTest", "broker-b", 0)) == 0
        assert store.read_memory(MessageQueue("%RETRY%g", "broker-a", 0)) == 1234567890123
        assert await LocalFileOffsetStore(path).read_store(MessageQueue("TopicTest", "broker-a", 3)) == 17
        # a write keeps every queue of the Java table
        store.update(MessageQueue("TopicTest", "broker-a", 3), 20, increase_only=True)
        await store.persist([MessageQueue("TopicTest", "broker-a", 3)])
        again = LocalFileOffsetStore(path)
        await again.load()
        assert again.table == {MessageQueue("TopicTest", "broker-a", 3): 20,
                               MessageQueue("TopicTest", "broker-b", 0): 0,
                               MessageQueue("%RETRY%g", "broker-a", 0): 1234567890123}

    asyncio.run(go())


def test_an_empty_java_table_is_read_as_no_offsets(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text('{\n\t"offsetTable":{}\n}')
    store = LocalFileOffsetStore(path)
    asyncio.run(store.load())
    assert store.table == {}


@pytest.mark.parametrize("text", ['{"offsetTable":{{"topic":"T","queueId":0}:1}}',
                                  '{"offsetTable":{{"topic":"T","brokerName":"b","queueId":0}:"x"}}',
                                  '{"offsetTable":{"T":1}}', '{"offsetTable":{{"topic":"T"'])
def test_a_java_style_table_that_is_broken_is_still_a_typed_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "offsets.json"
    path.write_text(text)
    with pytest.raises(OffsetStoreError):
        asyncio.run(LocalFileOffsetStore(path).load())
    assert path.read_text() == text


def test_two_stores_of_one_file_in_one_process_write_it_one_at_a_time(tmp_path: Path) -> None:
    """Two BROADCASTING consumers of one group in one process share ``<ip>@DEFAULT``, so one offsets file:
    their writes (each in a worker thread) must not trip over the other's temporary file."""
    path = tmp_path / "offsets.json"
    queues = [MessageQueue("T", "broker-a", q) for q in range(8)]
    errors: list[Exception] = []

    def writer(k: int) -> None:
        async def go() -> None:
            store = LocalFileOffsetStore(path)
            for i in range(150):
                for mq in queues:
                    store.update(mq, i * 10 + k, increase_only=False)
                try:
                    await store.persist(queues)
                except OffsetStoreError as exc:
                    errors.append(exc)

        asyncio.run(go())

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = LocalFileOffsetStore(path)
    asyncio.run(store.load())
    assert set(store.table) == set(queues)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json", "offsets.json.bak"], "no .tmp left"


@pytest.mark.parametrize("main", ["", "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\""])
def test_an_empty_or_torn_file_falls_back_to_the_java_clients_bak_file(tmp_path: Path, main: str) -> None:
    """4.9.3 keeps the previous table in ``offsets.json.bak`` and reads it when offsets.json is empty or does
    not parse (its writes are not fsynced: a crash can leave an empty file behind)."""
    path = tmp_path / "offsets.json"
    path.write_text(main)
    bak = tmp_path / "offsets.json.bak"
    bak.write_text(JAVA_FILE)
    store = LocalFileOffsetStore(path)
    asyncio.run(store.load())
    assert store.read_memory(MessageQueue("TopicTest", "broker-a", 3)) == 17
    assert asyncio.run(LocalFileOffsetStore(path).read_store(MessageQueue("TopicTest", "broker-b", 0))) == 0
    assert path.read_text() == main and bak.read_text() == JAVA_FILE


def test_a_bad_file_and_a_bad_bak_file_are_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text("not json")
    (tmp_path / "offsets.json.bak").write_text("not json either")
    with pytest.raises(OffsetStoreError):
        asyncio.run(LocalFileOffsetStore(path).load())
