"""A SEND_BATCH_MESSAGE whose body does not hold whole entries (a truncated entry header, a body or properties
length that runs past the end, a negative length) is answered as RocketMQ 4.9.3 answers it: its
MessageExtBatchEncoder reads the entries without bounds checks, the read past the end throws
(BufferUnderflowException, IndexOutOfBounds, IllegalArgumentException) and the remoting layer answers
SYSTEM_ERROR.  It was answered MESSAGE_ILLEGAL.  Nothing of such a batch is stored, not even its whole
entries before the broken one; a batch whose entry properties are not UTF-8 stays MESSAGE_ILLEGAL, and a
good batch sent after them is stored.  Raw frames against a running broker, under ASYNC_FLUSH and
SYNC_FLUSH."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from local_cluster import LocalCluster, stored_messages
from raw_frames import RawConnection
from test_bad_input import send_ext

from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import TopicConfig

TOPIC = "Hunt23MalformedBatch"


@pytest.fixture(scope="module", params=["ASYNC_FLUSH", "SYNC_FLUSH"])
def cluster(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("malformed-batch") / "store",
                      store_overrides={"flush_disk_type": request.param}) as c:
        c.call(lambda: c.broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1)))
        yield c


def _send(conn: RawConnection, body: bytes) -> tuple[int, str | None]:
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE,
                          send_ext(TOPIC, i=encode_properties({"WAIT": "true"}), m="true"), body)
    return answer.code, answer.remark


def _malformed() -> list[bytes]:
    good = encode_batch([BatchEntry(b"first", "TAGS\x01t"), BatchEntry(b"second", "UNIQ_KEY\x01u2")])
    first_len = struct.unpack_from(">i", good)[0]
    negative_body = bytearray(good)
    struct.pack_into(">i", negative_body, first_len + 16, -3)  # the second entry's BODYLEN
    long_props = bytearray(good)
    struct.pack_into(">h", long_props, first_len + 20 + len(b"second"), 200)  # its PROPLEN past the end
    negative_props = bytearray(good)
    struct.pack_into(">h", negative_props, 20 + len(b"first"), -30)  # the first entry's PROPLEN
    return [good[:-3], good + b"\x00" * 7, bytes(negative_body), bytes(long_props), bytes(negative_props),
            good[:10]]


def test_a_body_with_broken_entries_is_system_error_and_stores_nothing(
        cluster: LocalCluster, conn: RawConnection) -> None:
    before = len(stored_messages(cluster, TOPIC, queues=1))
    for body in _malformed():
        code, remark = _send(conn, body)
        assert code == ResponseCode.SYSTEM_ERROR, (body, remark)
        assert remark and remark.startswith("cannot decode the batch body")
    not_utf8 = encode_batch([BatchEntry(b"x", "")])[:-2] + struct.pack(">h", 2) + b"\xff\xfe"
    assert _send(conn, not_utf8)[0] == ResponseCode.MESSAGE_ILLEGAL
    cluster.wait_dispatched()
    assert len(stored_messages(cluster, TOPIC, queues=1)) == before
    assert _send(conn, encode_batch([BatchEntry(b"good", "TAGS\x01t")]))[0] == ResponseCode.SUCCESS
    cluster.wait_dispatched()
    stored = stored_messages(cluster, TOPIC, queues=1)
    assert [m.body for m in stored[before:]] == [b"good"]
