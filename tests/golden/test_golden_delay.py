"""Delay levels against the real RocketMQ 4.9.3 ``delay-demo`` store.

The real run put 4 messages (delay levels 1, 2, 3 and one plain message), kept its ScheduleMessageService
running about 7 s and shut down: levels 1 and 2 were delivered, level 3 (10 s) was not.  Here the same
messages go through our store's put path with our ScheduleService running on a clock that replays the real
run's timeline (it reads the manifest's store times, and is moved to the instants the real service
delivered at), and what is left behind must be what the real store left: the same commitlog and
consume-queue bytes, the same records, queues and key queries, and delayOffset.json in the very text
RocketMQ writes.  (tests/integration/test_delay_restart.py runs a broker on a copy of the real store,
loading its delayOffset.json.)
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketstore.broker.schedule import SCHEDULE_TOPIC, ScheduleService, encode_delay_offsets
from rocketstore.message.host import parse_host
from rocketstore.message.properties import PropertyName, parse_properties_raw
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dump import dump_store
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutResult

STORE = "delay-demo"
#: the real run's store host (every record and offset message id carries it)
STORE_HOST = "127.0.0.1:10911"
HOST_BITS = 0x10 | 0x20  # BORNHOST_V6 | STOREHOST_V6: the record encoder sets them from the hosts


def _golden_text(golden_dir: Path) -> str:
    return (golden_dir / "stores" / STORE / "config" / "delayOffset.json").read_text(encoding="utf-8")


def _message(spec: dict[str, Any], result: dict[str, Any]) -> Message:
    properties = parse_properties_raw(result["propertiesString"])
    if spec.get("delayLevel"):
        # the store adds these itself when it sees DELAY, as RocketMQ does
        properties.pop(PropertyName.REAL_TOPIC, None)
        properties.pop(PropertyName.REAL_QID, None)
    body = base64.b64decode(spec["bodyBase64"]) if "bodyBase64" in spec else spec["bodyText"].encode("utf-8")
    return Message(
        topic=spec["topic"], body=body, properties=properties, queue_id=spec["queueId"], flag=spec.get("flag", 0),
        sys_flag=result["sysFlag"] & ~HOST_BITS, born_timestamp=spec["bornTimestamp"],
        born_host=parse_host(spec["bornHost"]), store_host=parse_host(spec.get("storeHost", STORE_HOST)),
        reconsume_times=spec.get("reconsumeTimes", 0), store_timestamp=result["storeTimestamp"])


def _delivered_at(golden_dump: dict[str, Any]) -> dict[int, int]:
    """Real topic queue id -> store time of the message the real service delivered there."""
    out = {}
    for topic in golden_dump["topics"]:
        if topic["topic"] == "DelayTopic":
            for queue in topic["queues"]:
                [message] = queue["messages"]
                out[queue["queueId"]] = message["storeTimestamp"]
    return out


@dataclasses.dataclass
class Replay:
    path: Path
    results: list[PutResult]
    #: (simulated clock, level, delivered count) each time the test looked
    early_checks: list[tuple[int, int, int]]
    delivered: int
    level3_delivered_at_stop: int


async def _wait_for(fn: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not fn():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)


async def _replay(golden_dir: Path, golden_dump: dict[str, Any], config: StoreConfig, path: Path) -> Replay:
    manifest = json.loads((golden_dir / "manifests" / f"{STORE}.manifest.json").read_text(encoding="utf-8"))
    specs, refs = manifest["spec"]["messages"], manifest["results"]
    clock = [refs[0]["storeTimestamp"]]
    store = MessageStore.open(path, config)
    try:
        results = [store.put(_message(s, r)) for s, r in zip(specs, refs, strict=True)]
        assert store.wait_dispatched(30)

        async def put(message: Message) -> PutResult:
            # the broker's delivery put, stamped with the replayed clock instead of the wall clock
            result = store.put(dataclasses.replace(message, store_timestamp=clock[0]), apply_delay=False)
            store.wait_dispatched(30)
            return result

        service = ScheduleService(store, config.config_dir, put, lambda: clock[0])
        service.load()
        service.start()
        early: list[tuple[int, int, int]] = []
        due = {1: refs[0]["storeTimestamp"] + 1000, 2: refs[1]["storeTimestamp"] + 5000}
        try:
            for level, queue_id in ((1, 0), (2, 1)):
                # one ms before it is due, the message stays where it is, however often the service looks
                clock[0] = due[level] - 1
                await service.deliver_due(level)
                early.append((clock[0], level, service.delivered_count))
                # the instant the real service delivered it
                clock[0] = _delivered_at(golden_dump)[queue_id]
                await _wait_for(lambda n=level: service.delivered_count == n, 30, f"delivery of level {level}")
            # the real run stopped ~7 s after the first put, before level 3 (10 s) was due
            clock[0] = refs[0]["storeTimestamp"] + 7000
            await service.deliver_due(3)
            at_stop = service.delivered_count
        finally:
            await service.close()
        service.persist(force=True)
        return Replay(path, results, early, service.delivered_count, at_stop)
    finally:
        store.close()


@pytest.fixture(scope="module")
def replay(golden_dir: Path, golden_dump, golden_config, tmp_path_factory: pytest.TempPathFactory) -> Replay:  # type: ignore[no-untyped-def]
    config = golden_config(STORE).replace(store_path_root_dir=str(tmp_path_factory.mktemp("delay") / "store"),
                                          store_host=STORE_HOST)
    return asyncio.run(_replay(golden_dir, golden_dump(STORE), config, Path(config.store_path_root_dir)))


def test_puts_answer_what_the_real_store_answered(golden_dir: Path, replay: Replay) -> None:
    manifest = json.loads((golden_dir / "manifests" / f"{STORE}.manifest.json").read_text(encoding="utf-8"))
    for got, ref in zip(replay.results, manifest["results"], strict=True):
        assert (got.status.name, got.commit_log_offset, got.wrote_bytes, got.queue_offset, got.msg_id, got.topic,
                got.queue_id) == ("PUT_OK", ref["wroteOffset"], ref["wroteBytes"], ref["logicsOffset"], ref["msgId"],
                                  ref["storedTopic"], ref["storedQueueId"])


def test_nothing_is_delivered_before_it_is_due(replay: Replay) -> None:
    assert [(level, count) for _, level, count in replay.early_checks] == [(1, 0), (2, 1)]
    assert replay.level3_delivered_at_stop == 2 and replay.delivered == 2, "level 3 (10 s) was not due at the stop"


def test_delay_offset_file_is_the_text_rocketmq_writes(golden_dir: Path, replay: Replay) -> None:
    ours = (replay.path / "config" / "delayOffset.json").read_text(encoding="utf-8")
    assert ours == _golden_text(golden_dir) == '{\n\t"offsetTable":{1:1,2:1\n\t}\n}'


def test_delay_offset_text_format() -> None:
    assert encode_delay_offsets({}) == '{\n\t"offsetTable":{}\n}'
    assert encode_delay_offsets({3: 7}) == '{\n\t"offsetTable":{3:7\n\t}\n}'
    assert encode_delay_offsets({18: 2, 2: 10, 1: 0}) == '{\n\t"offsetTable":{1:0,2:10,18:2\n\t}\n}'


def _files(root: Path, sub: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, filenames in os.walk(root / sub):
        for f in filenames:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


@pytest.mark.parametrize("sub", ["commitlog", "consumequeue"])
def test_files_equal_the_real_store_byte_for_byte(golden_dir: Path, replay: Replay, sub: str) -> None:
    ours, ref = _files(replay.path, sub), _files(golden_dir / "stores" / STORE, sub)
    assert sorted(ref) == sorted(name for name in ours if ours[name].strip(b"\0") or name in ref)
    different = sorted(name for name in ref if ours[name] != ref[name])
    assert not different, f"files whose bytes differ: {different}"


@pytest.fixture(scope="module")
def replay_dump(replay: Replay, golden_config) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    with MessageStore.open(replay.path, golden_config(STORE), read_only=True) as store:
        return dump_store(store)


def test_records_queues_and_queries_equal_the_reference_dump(replay_dump: dict[str, Any], golden_dump) -> None:  # type: ignore[no-untyped-def]
    ref = golden_dump(STORE)
    assert replay_dump["commitlogRecords"] == ref["commitlogRecords"]
    fields = ("minOffset", "maxOffset", "cqEntries", "messages", "offsetByTime")
    ours = {(t["topic"], q["queueId"]): {f: q[f] for f in fields} for t in replay_dump["topics"] for q in t["queues"]}
    theirs = {(t["topic"], q["queueId"]): {f: q[f] for f in fields} for t in ref["topics"] for q in t["queues"]}
    assert ours == theirs
    strip = [{k: v for k, v in q.items() if not k.startswith("indexLastUpdate")} for q in ref["queries"]]
    assert [{k: v for k, v in q.items() if not k.startswith("indexLastUpdate")} for q in replay_dump["queries"]] \
        == strip


def test_schedule_queue_tags_code_is_the_delivery_time(replay_dump: dict[str, Any]) -> None:
    by_queue = {q["queueId"]: q for t in replay_dump["topics"] if t["topic"] == SCHEDULE_TOPIC for q in t["queues"]}
    delays = {0: 1000, 1: 5000, 2: 10_000}
    for queue_id, delay in delays.items():
        [entry], [message] = by_queue[queue_id]["cqEntries"], by_queue[queue_id]["messages"]
        assert entry["tagsCode"] == message["storeTimestamp"] + delay


def test_delivered_messages_keep_delay_and_real_topic_properties(replay_dump: dict[str, Any]) -> None:
    delivered = [m for t in replay_dump["topics"] if t["topic"] == "DelayTopic" for q in t["queues"]
                 for m in q["messages"]]
    assert [(m["queueId"], m["properties"]["DELAY"], m["properties"]["REAL_TOPIC"], m["properties"]["REAL_QID"])
            for m in delivered] == [(0, "1", "DelayTopic", "0"), (1, "2", "DelayTopic", "1")]
