"""A store whose disk fills up (a small tmpfs, as root) refuses puts with SERVICE_NOT_AVAILABLE: the log
says so once when the disk turns full (an error naming how full and the directory) and once when space is
back, not once per refused put and not never.  Counts of records over a bounded number of puts."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig

from .hunt17_diskfull_fs import fill, small_fs

CLEANUP = "rocketstore.store.cleanup"


def _put(store: MessageStore) -> PutMessageStatus:
    return store.put(Message.create("Hunt19DiskFull", b"v" * 100)).status


def _wait_for_log(caplog: pytest.LogCaptureFixture, what: str) -> None:
    deadline = time.monotonic() + 20
    while not [r for r in caplog.records if r.name == CLEANUP and r.levelno >= logging.WARNING]:
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _wait_for(store: MessageStore, status: PutMessageStatus, what: str) -> None:
    deadline = time.monotonic() + 20
    while _put(store) is not status:
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_full_disk_is_logged_once_and_its_end_once(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with small_fs(tmp_path, "4m") as mnt:
        # the disk is looked at every 50 ms (cleanResourceInterval), so it turns full without a new segment
        config = StoreConfig(store_path_root_dir=str(mnt / "store"), mapped_file_size_commit_log=1 << 20,
                             mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=100,
                             max_index_num=400, preallocate_commit_log=False, clean_resource_interval_ms=50)
        with caplog.at_level(logging.DEBUG, logger="rocketstore.store"), \
                MessageStore.open(None, config) as store:
            assert _put(store) is PutMessageStatus.PUT_OK
            scratch = fill(mnt)
            _wait_for(store, PutMessageStatus.SERVICE_NOT_AVAILABLE, "puts refused on the full disk")
            refused = [_put(store) for _ in range(200)]
            assert set(refused) == {PutMessageStatus.SERVICE_NOT_AVAILABLE}
            # the dispatcher's ENOSPC on a consume queue or index file may refuse puts first; the clean-up
            # thread's disk check (every 50 ms) says why up to one interval later
            _wait_for_log(caplog, "the full disk said by the clean-up thread")
            full = [r for r in caplog.records if r.name == CLEANUP and r.levelno >= logging.WARNING]
            assert len(full) == 1, [r.getMessage() for r in full]
            assert full[0].levelno == logging.ERROR and full[0].exc_info is None
            assert "writes are refused until space is freed" in full[0].getMessage()
            assert str(mnt / "store") in full[0].getMessage()
            scratch.unlink()
            _wait_for(store, PutMessageStatus.PUT_OK, "puts taken again once space was freed")
    back = [r for r in caplog.records if r.name == CLEANUP and "writes are taken again" in r.getMessage()]
    assert len(back) == 1 and back[0].levelno == logging.INFO
    assert len([r for r in caplog.records if r.name == CLEANUP and r.levelno >= logging.WARNING]) == 1
