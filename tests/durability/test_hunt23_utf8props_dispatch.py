"""A stored record whose properties are not UTF-8 (a bit flipped there, which the body CRC does not cover;
or bytes a non-Java client sent a 4.9.3 master, replicated as they are) must still be dispatched.

RocketMQ 4.9.3 (CommitLog.checkMessageAndReturnSize, the reput and recovery dispatch) reads the properties
as ``new String(bytes, UTF_8)``: malformed sequences become U+FFFD and the record gets its consume queue
entry, its tags code from the decoded TAGS and its index keys.  Ours gave it no entry and no keys, so the
record was unreachable and its queue offset was handed to the next put.  The flip below writes an encoded
surrogate (ED A0 80), which Java decodes to ONE U+FFFD (Python's "replace" gives three).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore.message.hashing import java_string_hash
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

CONFIG = StoreConfig()
#: what "TagA1" reads as once its first three bytes are ED A0 80, decoded as Java does
JAVA_TAGS = "\ufffdA1"


def _put_three(store: MessageStore) -> list[int]:
    offsets = []
    for i in range(3):
        r = store.put(Message.create("T", b"body%d" % i, tags="TagA%d" % i, keys="key%d" % i))
        assert r.ok
        offsets.append(r.commit_log_offset)
    assert store.wait_dispatched()
    return offsets


def _flip_tags(data: bytearray) -> None:
    at = data.find(b"TagA1")
    assert at > 0
    data[at : at + 3] = b"\xed\xa0\x80"


def _check(store: MessageStore, offsets: list[int], *, put_after: bool = True) -> None:
    assert store.max_offset("T", 0) == 3
    hit = store.get("T", 0, 0, 32, tags=frozenset({java_string_hash(JAVA_TAGS)}))
    assert hit.queue_offsets == (1,)
    assert store.get("T", 0, 0, 32).queue_offsets == (0, 1, 2)
    assert store._index is not None
    assert store._index.query("T", "key1", 10, 0, 2**62)[0] == [offsets[1]]
    if not put_after:  # (a slave takes no puts of its own)
        return
    nxt = store.put(Message.create("T", b"later"))
    assert nxt.ok and nxt.queue_offset == 3  # offset 1 is not handed out again


def _store_with_flipped_tags(root: Path) -> list[int]:
    """A store of three messages whose second's TAGS bytes are no longer UTF-8 on disk; their offsets."""
    with MessageStore.open(root, CONFIG) as store:
        offsets = _put_three(store)
    seg = sorted((root / "commitlog").iterdir())[0]
    data = bytearray(seg.read_bytes())
    _flip_tags(data)
    seg.write_bytes(bytes(data))
    return offsets


def test_java_decode_counts_an_encoded_surrogate_once() -> None:
    assert java_utf8(b"\xed\xa0\x80A1") == JAVA_TAGS
    assert java_utf8(b"a\xed\xa0b") == "a\ufffdb"
    assert java_utf8(b"\xe1\x80") == "\ufffd"
    assert java_utf8(b"\xf0\x80\x80\x80") == "\ufffd" * 4
    assert java_utf8("TagA\u00e9".encode()) == "TagA\u00e9"


def test_record_with_non_utf8_properties_is_dispatched_by_abnormal_recovery(tmp_path: Path) -> None:
    root = tmp_path / "store"
    offsets = _store_with_flipped_tags(root)
    # a crash before the queues and index reached the disk: all of it is dispatched again at open
    (root / "abort").write_bytes(b"")
    (root / "checkpoint").unlink()
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        _check(store, offsets)


def test_replica_record_with_non_utf8_properties_is_dispatched(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "master", CONFIG) as master:
        offsets = _put_three(master)
        data = bytearray(master.read_replica(0, 1 << 20))
    _flip_tags(data)
    with MessageStore.open(tmp_path / "slave", CONFIG) as slave:
        slave.append_replica(0, bytes(data))
        assert slave.wait_dispatched()
        _check(slave, offsets, put_after=False)


def test_rebuild_dispatches_a_record_with_non_utf8_properties(tmp_path: Path) -> None:
    from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial

    root = tmp_path / "store"
    offsets = _store_with_flipped_tags(root)
    plan = plan_rebuild(str(root), CONFIG.replace(store_path_root_dir=str(root)))
    rebuild_store(plan, scan_serial(plan), in_place=True)
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        _check(store, offsets)
