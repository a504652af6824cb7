"""Segments deleted before their fileReservedTime because the disk is over 85 % used (cleanFileForciblyEnable)
are logged as a WARNING that says so, while a deletion of expired segments stays an INFO line.

Found filling a small tmpfs under `rocketstore broker`: five segments of a 72 h reserve vanished with only
"retention: deleted 5 commitlog segment(s) (disk space)" at INFO, so nothing in a default (WARNING) log told
the operator that messages were dropped early; 4.9.3 warns at every pass that deletes for space."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig


def _config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                       max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                       file_reserved_time_h=72, delete_when="99")


def _retention_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("retention: deleted")]


def test_young_segments_deleted_for_space_are_a_warning(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.store.cleanup")
    with MessageStore.open(tmp_path, _config()) as store:
        for i in range(40):
            assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()
        store._cleaner.usage = lambda path: 0.88  # over 85 %: age no longer counts
        assert store.delete_expired_files().commit_log_files_deleted > 0
        [line] = _retention_lines(caplog)
        assert line.levelno == logging.WARNING
        assert "younger than fileReservedTime (72 h)" in line.getMessage() and "88.0%" in line.getMessage()


def test_expired_segments_deleted_for_space_stay_an_info_line(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.store.cleanup")
    with MessageStore.open(tmp_path, _config()) as store:
        for i in range(40):
            assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()
        past = time.time() - 100 * 3600
        for name in os.listdir(tmp_path / "commitlog"):
            os.utime(tmp_path / "commitlog" / name, (past, past))
        store._cleaner.usage = lambda path: 0.80  # over diskMaxUsedSpaceRatio (75): a pass by age
        assert store.delete_expired_files().commit_log_files_deleted > 0
        [line] = _retention_lines(caplog)
        assert line.levelno == logging.INFO


def test_a_disk_max_used_space_ratio_out_of_range_says_what_it_acts_as(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # found setting diskMaxUsedSpaceRatio=5 for a retention drill: GET_BROKER_CONFIG showed 5 while the
    # clean-up used 10 (4.9.3's getter clamps to 10 .. 95), and nothing said so
    caplog.set_level(logging.WARNING, logger="rocketstore.store.cleanup")
    with MessageStore.open(tmp_path, StoreConfig(disk_max_used_space_ratio=5)) as store:
        assert store._cleaner.max_used_ratio == 0.10
    [line] = [r for r in caplog.records if "diskMaxUsedSpaceRatio" in r.getMessage()]
    assert "diskMaxUsedSpaceRatio=5 acts as 10" in line.getMessage()
    caplog.clear()
    with MessageStore.open(tmp_path, StoreConfig(disk_max_used_space_ratio=75)):
        pass
    assert not [r for r in caplog.records if "diskMaxUsedSpaceRatio" in r.getMessage()]


def test_a_disk_over_the_ratio_with_nothing_to_delete_warns_once(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    # found on the tmpfs with cleanFileForciblyEnable=false: 89 % used, a 72 h reserve, nothing deletable,
    # and not a word until writes were refused at 90 % (4.9.3 warns "disk space will be full soon, but
    # delete file failed." at every such pass)
    caplog.set_level(logging.WARNING, logger="rocketstore.store.cleanup")
    with MessageStore.open(tmp_path, _config().replace(clean_file_forcibly_enable=False)) as store:
        for i in range(40):
            assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
        assert store.wait_dispatched()

        def warnings() -> list[logging.LogRecord]:
            return [r for r in caplog.records if "no commitlog segment could be deleted" in r.getMessage()]

        store._cleaner.usage = lambda path: 0.89
        for _ in range(3):
            assert store.delete_expired_files().commit_log_files_deleted == 0
        [line] = warnings()
        assert "89.0% used" in line.getMessage() and "cleanFileForciblyEnable, now false" in line.getMessage()
        store._cleaner.usage = lambda path: 0.30  # space freed elsewhere
        store.delete_expired_files()
        store._cleaner.usage = lambda path: 0.89  # and full again: a new warning
        store.delete_expired_files()
        assert len(warnings()) == 2
