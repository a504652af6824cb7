"""QUERY_MESSAGE's not-found answer carries the QueryMessageResponseHeader, as 4.9.3's QueryMessageProcessor
sends it: indexLastUpdateTimestamp / indexLastUpdatePhyoffset are set on every answer, 0 and 0 when no index
entry matched, the newest index file's end when entries matched but their records are gone."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within

from rocketstore.message.record import Message
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.store.message_store import MAX_TIMESTAMP

NOT_FOUND_REMARK = "can not find message, maybe time range not correct"


def _query(cluster: LocalCluster, key: str, begin: int = 0, end: int = MAX_TIMESTAMP) -> RemotingCommand:
    async def go() -> RemotingCommand:
        pool = ConnectionPool()
        try:
            return await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.QUERY_MESSAGE, {"topic": "QTopic", "key": key, "maxNum": "32",
                                            "beginTimestamp": str(begin), "endTimestamp": str(end)}), 5)
        finally:
            await pool.close()

    return run_within(go, 20.0)


def test_not_found_answers_carry_the_index_header(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides={"mapped_file_size_commit_log": 4096}) as cluster:
        store = cluster.broker.store
        missing = _query(cluster, "nope")
        assert missing.code == ResponseCode.QUERY_NOT_FOUND and missing.remark == NOT_FOUND_REMARK
        assert missing.ext_fields["indexLastUpdateTimestamp"] == "0"
        assert missing.ext_fields["indexLastUpdatePhyoffset"] == "0"

        first = store.put(Message.create("QTopic", b"x" * 200, keys="old", queue_id=0))
        assert first.ok
        assert store.wait_dispatched()
        found = _query(cluster, "old")
        assert found.code == ResponseCode.SUCCESS
        out_of_range = _query(cluster, "old", 0, first.store_timestamp - 1)
        assert out_of_range.code == ResponseCode.QUERY_NOT_FOUND
        assert (out_of_range.ext_fields["indexLastUpdateTimestamp"],
                out_of_range.ext_fields["indexLastUpdatePhyoffset"]) == ("0", "0")

        # roll past the first segment and let retention delete it: the index still lists "old"
        last = first
        while last.commit_log_offset < 3 * 4096:
            last = store.put(Message.create("QTopic", b"y" * 200, keys="new", queue_id=0))
            assert last.ok
        assert store.wait_dispatched()
        store.delete_expired_files(force=True, now_ms=last.store_timestamp + 100 * 3600_000)
        assert store.min_commit_log_offset > first.commit_log_offset
        gone = _query(cluster, "old")
        assert gone.code == ResponseCode.QUERY_NOT_FOUND and gone.remark == NOT_FOUND_REMARK
        assert gone.ext_fields["indexLastUpdatePhyoffset"] == str(last.commit_log_offset)
        assert gone.ext_fields["indexLastUpdateTimestamp"] == str(last.store_timestamp)
