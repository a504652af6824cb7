"""The rocketmq-store source meets a record whose body changed on disk after it was stored (bit rot): a
clean open re-checks only the commitlog's tail, and the cleanly-closed path reads the commitlog without any
recovery, so such a body became a row, changed, without a word.  Now each body read is checked against its
record's CRC (as the client's pull and the embedded store's get() do) and the task fails naming the
commitlog offset, topic, queue and queue offset; ``checkCRC=false`` reads such bodies as they are."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import MessageDecodeError, StoreConfigError
from rocketstore.message.columnar import decode_columns

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyarrow", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

pytestmark = pytest.mark.spark


def _flip_body_byte(root: Path, commit_log_offset: int, segment_bytes: int, at: int = 3) -> int:
    """Flip one bit of byte *at* of the body of the record at *commit_log_offset*; returns that byte's index
    in the body.  The record's header (and its CRC) stay as they were."""
    segment = root / "commitlog" / f"{commit_log_offset - commit_log_offset % segment_bytes:020d}"
    data = bytearray(segment.read_bytes())
    position = commit_log_offset % segment_bytes
    body_start = int(decode_columns(bytes(data), np.array([position])).body_start[0])
    data[body_start + at] ^= 0x01
    segment.write_bytes(data)
    return at


def _golden_record(dump: dict[str, Any], topic: str, queue_id: int, queue_offset: int) -> dict[str, Any]:
    [queue] = [q for t in dump["topics"] if t["topic"] == topic for q in t["queues"] if q["queueId"] == queue_id]
    [message] = [m for m in queue["messages"] if m["queueOffset"] == queue_offset]
    return message


def test_a_rotted_body_in_a_rocketmq_store_fails_the_read_naming_it(golden_copy, golden_dump, load) -> None:  # type: ignore[no-untyped-def]
    """A store RocketMQ 4.9.3 wrote and closed cleanly: read through its consume queues in commitlog order,
    without recovery."""
    root: Path = golden_copy("clean")
    record = _golden_record(golden_dump("clean"), "TopicA", 1, 3)
    offset = record["commitLogOffset"]
    at = _flip_body_byte(root, offset, 65536)
    with pytest.raises(Exception, match=f"body CRC mismatch .* in the record at commitlog offset {offset} of topic "
                                        "TopicA queue 1 queue offset 3: .*checkCRC=false") as caught:
        load(root, topics="TopicA").toArrow()
    assert "MessageDecodeError" in str(caught.value)

    # checkCRC=false: the rows as they are on disk, the changed body included
    table = load(root, topics="TopicA", checkCRC=False).toArrow()
    assert table.num_rows == 100
    rows = {(q, o): b for q, o, b in zip(table.column("queueId").to_pylist(), table.column("queueOffset").to_pylist(),
                                         table.column("body").to_pylist())}
    sent = base64.b64decode(record["bodyBase64"])
    assert rows[(1, 3)] != sent and rows[(1, 3)][:at] + rows[(1, 3)][at + 1:] == sent[:at] + sent[at + 1:]

    # the CRC covers the body only: a read without bodies reads nothing it covers, and is not refused
    assert load(root, topics="TopicA", includeBody=False).count() == 100
    assert load(root, topics="TopicA", schema="queueId int, queueOffset long").count() == 100


def test_a_rotted_body_in_a_store_left_open_fails_the_read_naming_it(tmp_path: Path, load) -> None:  # type: ignore[no-untyped-def]
    """A store with an ``abort`` file (live, or crashed) is read through a recovering open and get().  Its
    recovery walks from the segment the checkpoint names (3 s of slack before its times): the older segment of
    the damaged record is not walked, and its body is checked only when it becomes a row."""
    config = StoreConfig(mapped_file_size_commit_log=4096)
    with MessageStore.open(str(tmp_path), config) as store:
        results = [store.put(Message.create("T", b"message %d" % i, queue_id=0)) for i in range(120)]
        time.sleep(3.5)  # the later records' times put the earlier segments before the checkpoint's bound
        results += [store.put(Message.create("T", b"message %d" % i, queue_id=0)) for i in range(120, 240)]
        assert store.wait_dispatched()
    damaged = results[2].commit_log_offset
    _flip_body_byte(tmp_path, damaged, 4096)
    (tmp_path / "abort").touch()
    with pytest.raises(Exception, match=f"body CRC mismatch .* in the record at commitlog offset {damaged} of topic "
                                        "T queue 0 queue offset 2: "):
        load(tmp_path).toArrow()
    bodies = load(tmp_path, checkCRC=False).toArrow().column("body").to_pylist()
    assert len(bodies) == 240 and bodies[2] != b"message 2" and bodies[3] == b"message 3"


def test_check_crc_takes_true_or_false(tmp_path: Path) -> None:
    from rocketstore.spark.store_options import StoreReadOptions

    with MessageStore.open(str(tmp_path), StoreConfig()) as store:
        store.put(Message.create("T", b"x", queue_id=0))
    assert StoreReadOptions.parse({"path": str(tmp_path)}).check_crc is True
    assert StoreReadOptions.parse({"path": str(tmp_path), "checkCRC": "false"}).check_crc is False
    assert StoreReadOptions.parse({"path": str(tmp_path), "checkcrc": "FALSE"}).check_crc is False
    with pytest.raises(StoreConfigError, match="checkCRC='maybe' is not true or false"):
        StoreReadOptions.parse({"path": str(tmp_path), "checkCRC": "maybe"})


def test_record_batch_checks_only_the_bodies_that_become_rows() -> None:
    """record_batch (both read paths end there): a tag filter's dropped record is not checked; a record
    without a consume-queue entry to go by (the recovering path) is named by the offset it holds."""
    from rocketstore.message.host import HostAddress
    from rocketstore.message.record import encode_record
    from rocketstore.spark.arrow_decode import record_batch
    from rocketstore.spark.store_source import _arrow_schema, store_schema

    host = HostAddress(b"\x7f\x00\x00\x01", 10911)
    raws = []
    for i, props in enumerate(["TAGS\x01A", "TAGS\x01B"]):
        raw, _ = encode_record(Message(topic="T", body=b"body %d" % i, queue_id=5), props, born_host=host,
                               store_host=host, store_timestamp=1, commit_log_offset=1000 + 100 * i)
        raws.append(bytearray(raw))
    body_start = int(decode_columns(bytes(raws[1]), np.array([0])).body_start[0])
    raws[1][body_start] ^= 0x01  # the TagB record's body
    buf = bytes(raws[0] + raws[1])
    positions, queue_offsets = np.array([0, len(raws[0])]), np.array([7, 8])
    schema = _arrow_schema(store_schema())
    assert record_batch(buf, positions, queue_offsets, schema, tag_set={"A"}, check_crc=True).num_rows == 1
    with pytest.raises(MessageDecodeError, match="commitlog offset 1100 of topic T queue 5 queue offset 8: ") as caught:
        record_batch(buf, positions, queue_offsets, schema, check_crc=True)
    assert caught.value.offset == 1100
    assert record_batch(buf, positions, queue_offsets, schema).column("body").to_pylist()[1] != b"body 1"
