"""verify_store on a store whose topic was deleted (cleanUnusedTopic: its consume queues dropped, its records
left in the commitlog), given the broker's topic table or not (session 22's hunt)."""

from __future__ import annotations

from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.verify import ProblemKind, verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=160)


def _put(store: MessageStore, topic: str, count: int, queue_id: int = 0) -> None:
    for i in range(count):
        assert store.put(Message.create(topic, f"{topic}-{i}".encode(), queue_id=queue_id)).ok
    assert store.wait_dispatched()


def _store_with_deleted_topic(path: Path, *, created_again: bool) -> None:
    """Gone's 3 records (queue 0) and 2 (queue 1), then Live's; Gone deleted, and with *created_again* 2 more
    records sent to its queue 0 (which restarts at queue offset 0) and a last one of Live's."""
    with MessageStore.open(path, CONFIG) as store:
        _put(store, "Gone", 3)
        _put(store, "Gone", 2, queue_id=1)
        _put(store, "Live", 2)
        assert sorted(store.clean_unused_topics({"Live"})) == [("Gone", 0), ("Gone", 1)]
        if created_again:
            _put(store, "Gone", 2)
            _put(store, "Live", 1)


def test_a_deleted_topics_records_are_counted_given_the_topic_table(tmp_path: Path) -> None:
    _store_with_deleted_topic(tmp_path, created_again=False)
    with MessageStore.open(tmp_path, CONFIG, read_only=True) as store:
        report = verify_store(store, configured_topics={"Live"})
        assert report.ok, [str(p) for p in report.problems]
        assert report.deleted_topic_records == {"Gone": 5}
        # a topic the table still holds: its records without a consume queue are damage
        report = verify_store(store, configured_topics={"Live", "Gone"})
        assert report.counts_by_kind == {ProblemKind.RECORD_NOT_IN_CQ: 5} and not report.deleted_topic_records
        assert "(its topic is in config/topics.json)" in report.problems[0].detail


def test_without_the_topic_table_a_deleted_topic_is_reported_and_the_detail_says_it_may_be_one(
        tmp_path: Path) -> None:
    _store_with_deleted_topic(tmp_path, created_again=False)
    with MessageStore.open(tmp_path, CONFIG, read_only=True) as store:
        report = verify_store(store)
    assert report.counts_by_kind == {ProblemKind.RECORD_NOT_IN_CQ: 5} and not report.deleted_topic_records
    assert "or its topic was deleted" in report.problems[0].detail


def test_the_old_records_of_a_topic_created_again_are_counted_not_duplicates(tmp_path: Path) -> None:
    _store_with_deleted_topic(tmp_path, created_again=True)
    with MessageStore.open(tmp_path, CONFIG, read_only=True) as store:
        report = verify_store(store, configured_topics={"Live", "Gone"})
        assert report.ok, [str(p) for p in report.problems]
        # queue 1 has no consume queue again, but its records predate the deletion point queue 0 shows
        assert report.deleted_topic_records == {"Gone": 5}
        assert not verify_store(store).ok  # no topic table: as before, reported


def test_a_kept_topic_without_consume_queue_is_still_reported(tmp_path: Path) -> None:
    """cleanUnusedTopic never drops the transaction op topic's queues: their loss is damage, table or not."""
    with MessageStore.open(tmp_path, CONFIG) as store:
        _put(store, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 2)
        _put(store, "Live", 1)
    for f in (tmp_path / "consumequeue" / "RMQ_SYS_TRANS_OP_HALF_TOPIC" / "0").iterdir():
        f.unlink()
    (tmp_path / "consumequeue" / "RMQ_SYS_TRANS_OP_HALF_TOPIC" / "0").rmdir()
    with MessageStore.open(tmp_path, CONFIG, read_only=True) as store:
        report = verify_store(store, configured_topics={"Live"})
    assert report.counts_by_kind == {ProblemKind.RECORD_NOT_IN_CQ: 2} and not report.deleted_topic_records
