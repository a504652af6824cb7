"""A batch from the official C++ client 1.2.x (PyPI ``rocketmq`` 0.4.4) whose encoded body is past the
producer's compress threshold: the client deflates the whole batch body and flags it COMPRESSED (sysFlag bit
0), with its batch flag spelled ``"1"``.  It was refused (SYSTEM_ERROR "cannot decode the batch body": the
deflated bytes were read as entries), so ``send_batch`` failed against our broker only.

Against RocketMQ 4.9.3 (run side by side with the same client, ``RMQ_COMPRESS_OVER=10``, two batches of two
padded messages) the send succeeded: 4.9.3 reads the ``"1"`` flag as false and stored each batch as ONE
message, still flagged COMPRESSED, whose body inflates to the encoded batch (a consumer got one message with
no tags and an unreadable body per batch).  Ours stores the batches of that client as their messages (see
broker/send.py ``_is_batch``); the compressed one now is too, inflated first, each message uncompressed.
A body flagged so that does not inflate stays refused as before."""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from typing import Any

from cpp_driver import Runner, requires_cpp_client
from local_cluster import LocalCluster, stored_messages
from raw_frames import RawConnection
from runner_lines import body_of

from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import TopicConfig

TOPIC = "Hunt24CppCompressedBatch"


def _cpp_batch_send(conn: RawConnection, body: bytes, sys_flag: int) -> tuple[int, str | None]:
    """SEND_MESSAGE (code 10, long field names) as rocketmq-client-cpp 1.2.x writes a batch: batch="1"."""
    ext = {"producerGroup": "cpp-batch-producer", "topic": TOPIC, "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": str(sys_flag),
           "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
           "properties": encode_properties({"WAIT": "true"}), "reconsumeTimes": "0", "unitMode": "0",
           "batch": "1"}
    answer = conn.request(RequestCode.SEND_MESSAGE, ext, body)
    return answer.code, answer.remark


def test_a_deflated_cpp_batch_is_stored_as_its_messages(tmp_path) -> None:  # type: ignore[no-untyped-def]
    entries = [BatchEntry(f"body-{i} {'x' * 300}".encode(), f"KEYS\x01key-{i}\x02TAGS\x01TagA") for i in range(2)]
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.call(lambda: cluster.broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1)))
        conn = RawConnection(cluster.broker_addr)
        try:
            code, remark = _cpp_batch_send(conn, zlib.compress(encode_batch(entries)), sys_flag=1)
            assert code == ResponseCode.SUCCESS, remark
            # flagged COMPRESSED but not a zlib stream: refused as any batch body that does not decode
            code, remark = _cpp_batch_send(conn, b"\x00\x01not deflated", sys_flag=1)
            assert code == ResponseCode.SYSTEM_ERROR and remark and remark.startswith("cannot decode the batch")
        finally:
            conn.close()
        cluster.wait_dispatched()
        stored = stored_messages(cluster, TOPIC, queues=1)
    assert [m.body for m in stored] == [e.body for e in entries]
    assert [m.queue_offset for m in stored] == [0, 1]
    for i, m in enumerate(stored):
        assert not m.sys_flag & 1, "stored uncompressed"
        assert m.properties["KEYS"] == f"key-{i}" and m.properties["TAGS"] == "TagA"


@requires_cpp_client
def test_the_cpp_client_sends_and_pulls_a_compressed_batch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same through the real client: send_batch with a compress threshold of 10 bytes (each batch's body
    deflated), then its PullConsumer reads every message back, one by one."""
    topic = "Hunt24CppCompressedBatchClient"
    with LocalCluster(tmp_path / "store") as cluster:
        sent = _run(cluster.namesrv_addr, tmp_path / "p", ["produce", topic, "hunt24-batch-producer", "4", "--batch",
                                                           "2", "--pad", "300"], {"RMQ_COMPRESS_OVER": "10"})
        assert [(s["i"], s["n"], s["status"]) for s in sent if "status" in s] == [(0, 2, "OK"), (2, 2, "OK")], sent
        cluster.wait_dispatched()
        pulled = _run(cluster.namesrv_addr, tmp_path / "c", ["pull", topic, "hunt24-batch-puller"])
    bodies = sorted(m["body"] for m in pulled if "body" in m)
    assert bodies == sorted(f"{body_of(i)} {'x' * 300}" for i in range(4))


def _run(namesrv: str, home: Path, args: list[str], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    runner = Runner([args[0], namesrv, *args[1:]], home, env)
    try:
        runner.collect_until(lambda seen: any(s.get("done") or s.get("error") for s in seen), 90, args[0])
    finally:
        runner.kill()
    return runner.seen
