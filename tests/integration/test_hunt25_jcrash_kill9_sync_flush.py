"""``rocketstore serve`` with flushDiskType=SYNC_FLUSH killed with SIGKILL while sends go on, then started
again on the same store: every send answered SEND_OK is in the store at the queue offset its answer gave
(read by queue and found by key), no queue offset holds two messages, the store verifies, and the killed
store held a checkpoint (written a second after the start, as 4.9.3's flush services do).  Run the same way
against the real 4.9.3 broker (Java producers with sync sends and batches, a push consumer, kill -9 at
random moments) both brokers lost no SEND_OK message; these are the properties compared."""

from __future__ import annotations

import asyncio
import struct
import threading
from pathlib import Path

from serve_process import SMALL_STORE_CONF, ServeProcess, cli, wait_for, write_broker_conf

from rocketstore.client import Producer
from rocketstore.store.message_store import MessageStore
from rocketstore.store.config import StoreConfig

TOPIC = "Kill9Topic"
#: index files too large to fill here: a full one writes the checkpoint too, which would hide its flush
INDEX = {"maxHashSlotNum": 10_000, "maxIndexNum": 200_000}


def _store_config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=int(SMALL_STORE_CONF["mappedFileSizeCommitLog"]),
                       mapped_file_size_consume_queue=int(SMALL_STORE_CONF["mappedFileSizeConsumeQueue"]),
                       max_hash_slot_num=INDEX["maxHashSlotNum"], max_index_num=INDEX["maxIndexNum"])


def _send_until(namesrv: str, acked: dict[str, tuple[int, int]], stop: threading.Event, tag: str) -> None:
    """Sync sends from a few concurrent senders until *stop* (or the broker dies): SEND_OK ones in *acked*."""
    async def sender(producer: Producer, n: int) -> None:
        i = 0
        while not stop.is_set():
            key = f"{tag}-{n}-{i}"
            i += 1
            try:
                result = await producer.send(TOPIC, f"body {key}".encode(), keys=key)
            except Exception:  # noqa: BLE001 - the broker was killed under it
                return
            if result.status == "SEND_OK":
                acked[key] = (result.message_queue.queue_id, result.queue_offset)

    async def go() -> None:
        try:
            async with Producer(namesrv, f"kill9-producer-{tag}", timeout_s=5, retry_times=0) as producer:
                await asyncio.gather(*(sender(producer, n) for n in range(4)))
        except Exception:  # noqa: BLE001 - its close may fail on the dead broker
            pass

    asyncio.run(go())


def test_sync_flush_sends_answered_ok_survive_kill_9_and_restart(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    conf = write_broker_conf(tmp_path / "broker.conf", flushDiskType="SYNC_FLUSH", **INDEX)
    acked: dict[str, tuple[int, int]] = {}
    for round_no in range(2):
        stop = threading.Event()
        with ServeProcess(store_dir, conf) as serve:
            sender = threading.Thread(target=_send_until, args=(serve.namesrv_addr, acked, stop, f"r{round_no}"))
            sender.start()
            target = len(acked) + 200
            wait_for(lambda: len(acked) >= target, 60, "sends answered")
            checkpoint = store_dir / "checkpoint"
            wait_for(lambda: checkpoint.exists() and struct.unpack(">q", checkpoint.read_bytes()[:8])[0] > 0,
                     30, "the checkpoint")
            serve.kill()  # SIGKILL with sends in flight
            stop.set()
            sender.join(60)
            assert not sender.is_alive()
            assert (store_dir / "abort").exists()  # a crash, not a clean stop
    with ServeProcess(store_dir, conf) as serve:  # the restart recovers the crashed store
        assert serve.terminate() == 0
    assert not (store_dir / "abort").exists()
    verified = cli("store", "verify", str(store_dir), "-c", str(conf))
    assert verified.returncode == 0, verified.stdout[-2000:]

    store = MessageStore.open(store_dir, _store_config(), read_only=True)
    try:
        held: dict[tuple[int, int], str] = {}
        for queue_id in store.topics()[TOPIC] if TOPIC in store.topics() else []:
            offset = store.min_offset(TOPIC, queue_id)
            end = store.max_offset(TOPIC, queue_id)
            while offset < end:
                got = store.get(TOPIC, queue_id, offset, 64)
                for message in got.messages:
                    key = message.properties["KEYS"]
                    assert (queue_id, message.queue_offset) not in held
                    held[(queue_id, message.queue_offset)] = key
                    assert message.body == f"body {key}".encode()
                assert got.next_begin_offset > offset
                offset = got.next_begin_offset
        missing = {key: where for key, where in acked.items() if held.get(where) != key}
        assert missing == {}
        for key in list(acked)[::50]:  # and by key, through the index the recovery kept or rebuilt
            assert [m.properties["KEYS"] for m in store.query(TOPIC, key, 8).messages] == [key]
    finally:
        store.close()
