"""A commitlog segment that cannot be created (a full disk below the 90 % mark, no file descriptors) is logged
once as an ERROR with its cause, and again only after a segment could be made in between.

Found filling an 8 MiB tmpfs under `rocketstore broker`: sends failed with 4.9.3's fixed "create mapped file
failed, server is busy or broken." while the broker's log (even at -v) said nothing, so the cause (ENOSPC)
was nowhere to be read; 4.9.3 logs the failed creation in store.log."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.results import PutMessageStatus


def test_a_failed_segment_creation_is_logged_once_per_spell(tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="rocketstore.store.commitlog")
    config = StoreConfig(mapped_file_size_commit_log=4096, preallocate_commit_log=False)
    with MessageStore.open(tmp_path, config) as store:
        files = store._commitlog.files
        real_create = files.create_next

        def no_space(*args: object) -> object:
            raise OSError(errno.ENOSPC, "No space left on device")

        def lines() -> list[logging.LogRecord]:
            return [r for r in caplog.records if "cannot create a commitlog segment" in r.getMessage()]

        files.create_next = no_space  # type: ignore[method-assign]
        statuses = [store.put(Message.create("T", b"x" * 500, queue_id=0)).status for _ in range(20)]
        assert statuses.count(PutMessageStatus.CREATE_MAPEDFILE_FAILED) > 5
        [line] = lines()
        assert line.levelno == logging.ERROR and "No space left on device" in line.getMessage()

        files.create_next = real_create  # type: ignore[method-assign]
        assert store.put(Message.create("T", b"x" * 500, queue_id=0)).ok  # a new segment: the spell is over
        files.create_next = no_space  # type: ignore[method-assign]
        for _ in range(20):
            store.put(Message.create("T", b"x" * 500, queue_id=0))
        assert len(lines()) == 2
        files.create_next = real_create  # type: ignore[method-assign]
