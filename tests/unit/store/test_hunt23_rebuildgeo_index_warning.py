"""The warning about index files left unread for their size, on a read-only open with messageIndexEnable=false.

The Spark ``rocketmq-store`` source (and ``pipeline report``) open a store whose index geometry they cannot
tell (the golden stores: 8,440-byte files, 100 slots and 400 entries) with the index disabled and RocketMQ's
default geometry; they never query by key, so the warning that the index is left unread was noise on stderr,
twice per read (driver and executor).  Such an opener passes ``index_wanted=False`` and the line is DEBUG; an
embedded store (or a broker) whose key queries would answer nothing still warns.
"""

from __future__ import annotations

import logging

import pytest

from rocketstore import MessageStore
from rocketstore.spark.store_options import detect_config

LOGGER = "rocketstore.store.index_file"


def _unread_warnings(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == level and "is left unread" in r.getMessage()]


@pytest.mark.parametrize("name", ["clean", "killed"])
def test_a_scan_open_of_another_index_geometry_does_not_warn(golden_copy, caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
                                                             name: str) -> None:
    store = golden_copy(name)
    config = detect_config(str(store))
    assert not config.message_index_enable  # the index geometry is not the default: left closed
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with MessageStore.open(store, config, read_only=True, index_wanted=False) as ms:
        assert ms.max_commit_log_offset > 0
    assert _unread_warnings(caplog, logging.WARNING) == []
    assert len(_unread_warnings(caplog, logging.DEBUG)) == 1  # still there for whoever asks for DEBUG


def test_an_embedded_open_whose_key_queries_answer_nothing_still_warns(golden_copy,  # type: ignore[no-untyped-def]
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    store = golden_copy("clean")
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with MessageStore.open(store, detect_config(str(store)), read_only=True):
        pass
    warned = _unread_warnings(caplog, logging.WARNING)
    assert len(warned) == 1 and "has 8440 bytes, not the 420000040" in warned[0]


def test_the_spark_store_source_opens_without_the_warning(golden_copy,  # type: ignore[no-untyped-def]
                                                          caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from rocketstore.spark import store_source

    store = golden_copy("killed")  # not closed cleanly: planned and read through a recovering open
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    try:
        opened = store_source._cached_open("store", str(store), detect_config(str(store)), "hunt23-rebuildgeo")
        assert isinstance(opened, MessageStore)
    finally:
        store_source._close_cached_store()
    assert _unread_warnings(caplog, logging.WARNING) == []
