"""Bit rot found by the open's own checks: a record whose body fails its CRC while its header and lengths hold
together was written whole (a clean close synced it; after a crash, the checkpoint vouches for it), so the
recovery keeps it and every record after it, and logs it as damaged.  It cut the commitlog at it, losing every
good record that followed.  A torn write after a crash (past what the checkpoint vouches for) is still cut."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import MessageDecodeError
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.store.checkpoint import CHECKPOINT_LAYOUT

from .test_hunt20_corruptread_get import CONFIG as SMALL
from .test_hunt20_corruptread_get import _damaged_store

#: one segment: the damaged record is in the tail the open re-checks
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20)
COUNT = 5
DAMAGED = 2


def _store_with_flipped_body(path: Path) -> list[int]:
    """COUNT records in queue T/0, closed cleanly, then one bit of record DAMAGED's body flipped; their
    commitlog offsets."""
    with MessageStore.open(str(path), CONFIG) as store:
        offsets = [store.put(Message.create("T", b"message %d" % i, queue_id=0,
                                            properties={"KEYS": "k%d" % i})).commit_log_offset
                   for i in range(COUNT)]
        assert store.wait_dispatched()
    with open(path / "commitlog" / f"{0:020d}", "r+b") as segment:
        segment.seek(offsets[DAMAGED] + 88 + 3)  # in the body ("message 2")
        byte = segment.read(1)[0]
        segment.seek(offsets[DAMAGED] + 88 + 3)
        segment.write(bytes([byte ^ 0x01]))
    return offsets


def _crashed(path: Path, checkpoint_ms: int | None) -> None:
    """Make the next open an abnormal one; with *checkpoint_ms*, the checkpoint says all was flushed then."""
    (path / "abort").write_bytes(b"")
    if checkpoint_ms is not None:
        (path / "checkpoint").write_bytes(CHECKPOINT_LAYOUT.pack(checkpoint_ms, checkpoint_ms, 0).ljust(4096,
                                                                                                       b"\0"))


def test_clean_open_keeps_a_record_whose_body_rotted_and_every_record_after_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    offsets = _store_with_flipped_body(tmp_path)
    with caplog.at_level(logging.ERROR, logger="rocketstore.store.recovery"), \
            MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.max_offset("T", 0) == COUNT
        assert store.recovery.damaged_records == (offsets[DAMAGED],)
        assert store.recovery.first_invalid_reason is None
        got = store.get("T", 0, DAMAGED + 1, max_count=8)
        assert [m.body for m in got.messages] == [b"message 3", b"message 4"]
        with pytest.raises(MessageDecodeError, match="body CRC mismatch"):
            store.get("T", 0, DAMAGED, max_count=1).messages  # noqa: B018 - the property decodes
        # the store takes new records after the kept ones, not over them
        assert store.put(Message.create("T", b"message 5", queue_id=0)).queue_offset == COUNT
    [line] = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert str(offsets[DAMAGED]) in line and "topic T, queue 0, queue offset 2" in line


def test_crash_open_keeps_a_rotted_record_the_checkpoint_vouches_for(tmp_path: Path) -> None:
    offsets = _store_with_flipped_body(tmp_path)
    _crashed(tmp_path, int(time.time() * 1000) + 60_000)
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.recovery.abnormal
        assert store.max_offset("T", 0) == COUNT
        assert store.recovery.damaged_records == (offsets[DAMAGED],)
        assert [m.body for m in store.get("T", 0, DAMAGED + 1, max_count=8).messages] == [b"message 3",
                                                                                         b"message 4"]


def test_crash_open_still_cuts_a_bad_body_past_the_checkpoint(tmp_path: Path) -> None:
    """Past what the checkpoint vouches for a body that fails its CRC may be a torn write: cut there."""
    offsets = _store_with_flipped_body(tmp_path)
    _crashed(tmp_path, None)  # the clean close's checkpoint: its records are within its 3 s of slack
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.recovery.abnormal
        assert store.recovery.first_invalid_reason == "body CRC mismatch"
        assert store.recovery.valid_end == offsets[DAMAGED]
        assert store.max_offset("T", 0) == DAMAGED
        assert store.recovery.damaged_records == ()


def test_clean_open_still_cuts_at_a_record_whose_header_is_damaged(tmp_path: Path) -> None:
    """A damaged size leaves no way to the next record from here: the walk ends (as before)."""
    offsets = _store_with_flipped_body(tmp_path)
    with open(tmp_path / "commitlog" / f"{0:020d}", "r+b") as segment:
        segment.seek(offsets[DAMAGED] + 1)
        segment.write(b"\x40")
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.recovery.valid_end == offsets[DAMAGED]
        assert store.max_offset("T", 0) == DAMAGED
    assert os.path.exists(tmp_path / "commitlog")


# --- look-ups: a damaged record is named, not "no such message" and not a body handed out as intact ---------


def test_message_at_and_by_id_name_a_record_whose_body_rotted(tmp_path: Path) -> None:
    offsets = _store_with_flipped_body(tmp_path)
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        with pytest.raises(MessageDecodeError,
                           match=f"body CRC mismatch .*commitlog offset {offsets[DAMAGED]}"):
            store.message_at(offsets[DAMAGED])
        with pytest.raises(MessageDecodeError, match=f"commitlog offset {offsets[DAMAGED]}"):
            store.message_by_id(encode_offset_message_id(store.store_host, offsets[DAMAGED]))
        assert store.message_at(offsets[DAMAGED + 1]).body == b"message 3"  # type: ignore[union-attr]
        # no record starts in the middle of one, past the end or in the end-of-segment fill: still None
        assert store.message_at(offsets[DAMAGED] + 7) is None
        assert store.message_at(store.max_commit_log_offset + 10) is None


def test_query_by_key_names_a_hit_whose_body_rotted(tmp_path: Path) -> None:
    offsets = _store_with_flipped_body(tmp_path)
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        with pytest.raises(MessageDecodeError, match=f"commitlog offset {offsets[DAMAGED]}"):
            store.query("T", "k%d" % DAMAGED)
        assert [m.body for m in store.query("T", "k3").messages] == [b"message 3"]


def test_message_at_names_a_record_whose_size_rotted(tmp_path: Path) -> None:
    """Away from the tail the clean open re-checks, a flipped TOTALSIZE reaches the readers."""
    _damaged_store(tmp_path, "size")
    with MessageStore.open(str(tmp_path), SMALL) as store:
        offset = store.queue_entries("T", 0, 2, 1)[0][0]  # type: ignore[index]
        with pytest.raises(MessageDecodeError, match=f"declared size .*commitlog offset {offset}"):
            store.message_at(offset)


def test_dump_and_verify_name_a_rotted_record_among_a_keys_hits(tmp_path: Path) -> None:
    """The store's own tools go on past a look-up that now raises: the dump lists the key's query with the
    error, verify reports the CRC (its commitlog walk) and not a key the index lost."""
    from rocketstore.store.dump import dump_store
    from rocketstore.store.verify import ProblemKind, verify_store

    offsets = _store_with_flipped_body(tmp_path)
    with MessageStore.open(str(tmp_path), CONFIG, read_only=True) as store:
        dumped = dump_store(store)
        report = verify_store(store)
    [query] = [q for q in dumped["queries"] if q["key"] == "k%d" % DAMAGED]
    assert "body CRC mismatch" in query["error"] and str(offsets[DAMAGED]) in query["error"]
    assert {p.kind for p in report.problems} == {ProblemKind.BODY_CRC_MISMATCH}
