"""A batch send (SEND_BATCH_MESSAGE) whose body fits maxMessageSize but whose stored records do not - one
record once the broker adds the topic, the hosts and the batch's own properties, or the records together -
is answered as RocketMQ 4.9.3 answers it: MessageExtBatchEncoder throws RuntimeException("message size
exceeded") and the remoting layer answers SYSTEM_ERROR with that text (a client retries it as any
SYSTEM_ERROR).  A batch whose body itself is too large stays MESSAGE_ILLEGAL (checkMessages), and a batch
that fits is stored.  Raw frames against a running broker, under ASYNC_FLUSH and SYNC_FLUSH."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from local_cluster import LocalCluster, stored_messages
from test_bad_input import RawConnection, send_ext

from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import TopicConfig

TOPIC = "BatchRecordSize"
LIMIT = 1024
EXCEEDED = "java.lang.RuntimeException: message size exceeded"


@pytest.fixture(scope="module", params=["ASYNC_FLUSH", "SYNC_FLUSH"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("batch-size") / "store",
                      store_overrides={"max_message_size": LIMIT, "flush_disk_type": request.param}) as c:
        c.call(lambda: c.broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1)))
        yield c


def _send(conn: RawConnection, entries: list[BatchEntry]) -> tuple[int, str | None]:
    body = encode_batch(entries)
    assert len(body) <= LIMIT  # the body fits: only the stored records do not
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE,
                          send_ext(TOPIC, i=encode_properties({PropertyName.WAIT: "true"}), m="true"), body)
    return answer.code, answer.remark


def test_one_stored_record_over_the_limit_is_system_error(cluster: LocalCluster, conn: RawConnection) -> None:
    before = len(stored_messages(cluster, TOPIC, queues=1))
    # 22 bytes of entry fields around the body in the request; 91 + topic + the batch's properties stored
    assert _send(conn, [BatchEntry(b"x" * (LIMIT - 40), "")]) == (ResponseCode.SYSTEM_ERROR, EXCEEDED)
    cluster.wait_dispatched()
    assert len(stored_messages(cluster, TOPIC, queues=1)) == before


def test_records_together_over_the_limit_are_system_error(cluster: LocalCluster, conn: RawConnection) -> None:
    before = len(stored_messages(cluster, TOPIC, queues=1))
    entries = [BatchEntry(b"y" * 440, "TAGS\x01t"), BatchEntry(b"z" * 440, "TAGS\x01t")]
    assert _send(conn, entries) == (ResponseCode.SYSTEM_ERROR, EXCEEDED)
    cluster.wait_dispatched()
    assert len(stored_messages(cluster, TOPIC, queues=1)) == before


def test_a_fitting_batch_is_stored_and_a_too_large_body_stays_message_illegal(
        cluster: LocalCluster, conn: RawConnection) -> None:
    code, remark = _send(conn, [BatchEntry(b"a" * 100, "TAGS\x01t"), BatchEntry(b"b" * 100, "")])
    assert code == ResponseCode.SUCCESS, remark
    body = encode_batch([BatchEntry(b"c" * LIMIT, "")])
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE,
                          send_ext(TOPIC, i=encode_properties({PropertyName.WAIT: "true"}), m="true"), body)
    assert answer.code == ResponseCode.MESSAGE_ILLEGAL, answer.remark
