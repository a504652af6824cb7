"""deleteWhen's hours read as 4.9.3's Integer.parseInt reads them (hunt 23, retention2).

A part that str.isdigit passes but int() refuses (a superscript digit) made the store fail to open with a
bare ValueError, and an update of the run-time settings raise after it had replaced the config; a sign,
which Integer.parseInt takes ("+4"), made the hour be ignored.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig

EVERY_HOUR_SIGNED = ";".join(f"+{h}" for h in range(24))


def _config(delete_when: str) -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                       max_hash_slot_num=8, max_index_num=16, preallocate_commit_log=False,
                       file_reserved_time_h=1, delete_when=delete_when, disk_max_used_space_ratio=95)


def _fill_and_age(store: MessageStore, store_dir: Path) -> None:
    for i in range(40):
        assert store.put(Message.create("Ret", b"x" * 300, keys=f"k{i}")).ok
    assert store.wait_dispatched()
    past = time.time() - 100 * 3600
    for name in os.listdir(store_dir / "commitlog"):
        os.utime(store_dir / "commitlog" / name, (past, past))


def test_a_store_opens_with_an_hour_parseint_refuses_and_deletes_at_the_others(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config("\u00b2;" + EVERY_HOUR_SIGNED), background=False) as store:
        _fill_and_age(store, tmp_path)
        report = store.delete_expired_files()  # not forced: the hour of day asks for it
        assert report.reason == "time"
        assert report.commit_log_files_deleted > 0


def test_a_settings_update_with_such_an_hour_takes_effect(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, _config("99"), background=False) as store:
        _fill_and_age(store, tmp_path)
        assert store.delete_expired_files().commit_log_files_deleted == 0
        store.update_run_time_settings(_config("\u00b9;" + EVERY_HOUR_SIGNED))
        report = store.delete_expired_files()
        assert report.reason == "time" and report.commit_log_files_deleted > 0
