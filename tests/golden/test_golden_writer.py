"""Writing the `clean` manifest's messages with our store reproduces the real store's bytes.

Given the same messages with the same store timestamps, hosts and properties strings, every commitlog and
consume-queue file must equal the one RocketMQ 4.9.3 wrote.  The manifest does not say how bodies were
generated, so each body is taken from the golden record the real store wrote for that message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rocketstore.message.host import parse_host
from rocketstore.message.properties import PropertyName, parse_properties_raw
from rocketstore.message.record import Message, SysFlag, decode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MAX_TIMESTAMP, MessageStore
from rocketstore.store.results import PutResult

CONFIG = StoreConfig(mapped_file_size_commit_log=65536, mapped_file_size_consume_queue=6000, max_hash_slot_num=100,
                     max_index_num=400, store_host="127.0.0.1:10911")
HOST_BITS = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6


def _golden_body(golden_store: Path, offset: int) -> bytes:
    segment = offset - offset % CONFIG.mapped_file_size_commit_log
    data = (golden_store / "commitlog" / f"{segment:020d}").read_bytes()
    return decode_record(data, offset - segment).body


def _message(spec: dict[str, Any], result: dict[str, Any], body: bytes) -> Message:
    properties = parse_properties_raw(result["propertiesString"])
    if spec.get("delayLevel"):
        # the store adds these itself when it sees DELAY, as RocketMQ does
        properties.pop(PropertyName.REAL_TOPIC, None)
        properties.pop(PropertyName.REAL_QID, None)
    return Message(
        topic=spec["topic"], body=body, properties=properties, queue_id=spec["queueId"],
        flag=spec.get("flag", 0), sys_flag=spec.get("sysFlag", 0) & ~HOST_BITS,
        born_timestamp=spec["bornTimestamp"], born_host=parse_host(spec["bornHost"]),
        store_host=parse_host(spec["storeHost"]), reconsume_times=spec.get("reconsumeTimes", 0),
        prepared_transaction_offset=spec.get("preparedTransactionOffset", 0),
        store_timestamp=result["storeTimestamp"])


@pytest.fixture(scope="module")
def written(golden_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[PutResult]]:
    """The clean manifest written by our store into a fresh directory (closed afterwards)."""
    manifest = json.loads((golden_dir / "manifests" / "clean.manifest.json").read_text(encoding="utf-8"))
    golden_store = golden_dir / "stores" / "clean"
    path = tmp_path_factory.mktemp("written") / "store"
    results = []
    with MessageStore.open(path, CONFIG) as store:
        for spec, result in zip(manifest["spec"]["messages"], manifest["results"], strict=True):
            body = _golden_body(golden_store, result["wroteOffset"])
            results.append(store.put(_message(spec, result, body)))
    return path, results


def test_every_put_answers_what_the_real_store_answered(golden_dir: Path, written) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((golden_dir / "manifests" / "clean.manifest.json").read_text(encoding="utf-8"))
    _, results = written
    wrong = []
    for i, (got, ref) in enumerate(zip(results, manifest["results"], strict=True)):
        want = ("PUT_OK", ref["wroteOffset"], ref["wroteBytes"], ref["logicsOffset"], ref["msgId"],
                ref["storedTopic"], ref["storedQueueId"])
        have = (got.status.name, got.commit_log_offset, got.wrote_bytes, got.queue_offset, got.msg_id, got.topic,
                got.queue_id)
        if have != want:
            wrong.append(f"message {i}: ours {have}, reference {want}")
    assert not wrong, "\n".join(wrong[:10])


def _segment_files(root: Path, sub: str) -> dict[str, bytes]:
    out = {}
    base = root / sub
    for dirpath, _, filenames in os.walk(base):
        for f in filenames:
            p = Path(dirpath) / f
            out[str(p.relative_to(base))] = p.read_bytes()
    return out


@pytest.mark.parametrize("sub", ["commitlog", "consumequeue"])
def test_files_equal_the_golden_store_byte_for_byte(golden_dir: Path, written, sub: str) -> None:  # type: ignore[no-untyped-def]
    path, _ = written
    ours = _segment_files(path, sub)
    ref = _segment_files(golden_dir / "stores" / "clean", sub)
    missing = sorted(set(ref) - set(ours))
    assert not missing, f"files the real store wrote and we did not: {missing}"
    different = sorted(name for name in ref if ours[name] != ref[name])
    assert not different, f"files whose bytes differ: {different}"
    extra_not_zero = sorted(name for name in set(ours) - set(ref) if ours[name].strip(b"\0"))
    assert not extra_not_zero, f"extra files holding data: {extra_not_zero}"


def test_queries_on_the_written_store_find_the_reference_hits(written, golden_dump) -> None:  # type: ignore[no-untyped-def]
    path, _ = written
    wrong = []
    with MessageStore.open(path, CONFIG, read_only=True) as store:
        for query in golden_dump("clean")["queries"]:
            got = store.query(query["topic"], query["key"], 64, 0, MAX_TIMESTAMP)
            mine = sorted(m.commit_log_offset for m in got.messages)
            theirs = sorted(h["commitLogOffset"] for h in query["hits"])
            if mine != theirs:
                wrong.append(f"{query['topic']}#{query['key']}: ours {mine}, reference {theirs}")
    assert not wrong, "\n".join(wrong[:10])
