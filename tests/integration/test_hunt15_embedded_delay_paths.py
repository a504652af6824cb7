"""DELAY read as RocketMQ 4.9.3 reads it (Integer.parseInt, one shared parser) on the broker paths besides a
plain send, on raw remoting frames against a running broker:

* a batch send: 4.9.3's putMessages reads the batch's own DELAY (the request header's properties), never an
  entry's; text parseInt refuses throws (SYSTEM_ERROR with the NumberFormatException), a level > 0 is
  MESSAGE_ILLEGAL, an entry's DELAY is stored as it came;
* END_TRANSACTION's commit: endMessageTransaction reads REAL_QID and the CommitLog reads DELAY with parseInt;
  when either throws the answer is SYSTEM_ERROR, nothing is stored and the half message stays open;
* a reply (SEND_REPLY_MESSAGE_V2): pushed first, then the store's parseInt throws: SYSTEM_ERROR, not stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored
from test_bad_input import RawConnection, send_ext

from rocketstore.broker.transactions import HALF_TOPIC, OP_TOPIC
from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.message.record import Message
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import TopicConfig
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.store.dispatch import SCHEDULE_TOPIC

TOPIC = "DelayPathsTopic"
GROUP = "delay-paths-group"
NFE = 'java.lang.NumberFormatException: For input string: "'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("delay-paths") / "store") as c:
        for topic in (TOPIC, "DefaultCluster_REPLY_TOPIC"):
            c.call(lambda t=topic: c.broker.topics.update(TopicConfig(t, read_queue_nums=1, write_queue_nums=1)))
        yield c


def nothing_scheduled(cluster: LocalCluster) -> bool:
    cluster.wait_dispatched()
    return stored_messages(cluster, SCHEDULE_TOPIC, queues=18) == []


# --- batch sends -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [" 3", "3_0", "abc", "1.5"])
def test_a_batch_whose_own_delay_is_no_java_int_is_answered_with_the_number_format_exception(
        cluster: LocalCluster, conn: RawConnection, delay: str) -> None:
    # before: int() read " 3" and "3_0" as levels (MESSAGE_ILLEGAL) and "abc" as 0 (stored)
    before = len(stored_messages(cluster, TOPIC, queues=1))
    props = encode_properties({PropertyName.WAIT: "true", PropertyName.DELAY: delay})
    body = encode_batch([BatchEntry(b"a", ""), BatchEntry(b"b", "")])
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE, send_ext(TOPIC, i=props, m="true"), body)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, f'{NFE}{delay}"')
    assert len(stored_messages(cluster, TOPIC, queues=1)) == before
    assert nothing_scheduled(cluster)


def test_a_batch_whose_own_delay_is_a_level_is_message_illegal_and_an_entrys_delay_is_stored_as_it_came(
        cluster: LocalCluster, conn: RawConnection) -> None:
    before = len(stored_messages(cluster, TOPIC, queues=1))
    delayed = encode_properties({PropertyName.WAIT: "true", PropertyName.DELAY: "2"})
    body = encode_batch([BatchEntry(b"a", ""), BatchEntry(b"b", "")])
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE, send_ext(TOPIC, i=delayed, m="true"), body)
    assert answer.code == ResponseCode.MESSAGE_ILLEGAL, answer.remark
    # an entry's DELAY is not read by 4.9.3's putMessages (before: MESSAGE_ILLEGAL here)
    plain = encode_properties({PropertyName.WAIT: "true"})
    body = encode_batch([BatchEntry(b"entry-delay", "DELAY\x012\x02TAGS\x01t"), BatchEntry(b"plain", "TAGS\x01t")])
    answer = conn.request(RequestCode.SEND_BATCH_MESSAGE, send_ext(TOPIC, i=plain, m="true"), body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    found = wait_stored(cluster, TOPIC, before + 2, "the batch", queues=1)[before:]
    assert [(m.body, m.properties.get(PropertyName.DELAY)) for m in found] == [(b"entry-delay", "2"), (b"plain", None)]
    assert nothing_scheduled(cluster)


# --- END_TRANSACTION -----------------------------------------------------------------------------------------------


def _half(cluster: LocalCluster, uniq: str, **props: str) -> tuple[int, int]:
    """A half message put straight into the store (its DELAY or REAL_QID unread): (queue offset, commitlog
    offset)."""
    properties = {PropertyName.REAL_TOPIC: TOPIC, PropertyName.REAL_QID: "0", PropertyName.PGROUP: GROUP,
                  PropertyName.UNIQ_KEY: uniq, PropertyName.TRAN_MSG: "true", **props}
    half = Message(HALF_TOPIC, b"half-" + uniq.encode(), properties, 0, 0, 0, int(time.time() * 1000))
    result = cluster.call(lambda: cluster.broker.store.put(half, apply_delay=False))
    assert result.ok, result
    cluster.wait_dispatched()
    return result.queue_offset, result.commit_log_offset


@pytest.mark.parametrize(("props", "bad"), [
    ({PropertyName.DELAY: " 3"}, " 3"),
    ({PropertyName.DELAY: "2_0"}, "2_0"),
    ({PropertyName.REAL_QID: " 0"}, " 0"),
    ({PropertyName.REAL_QID: "0_0"}, "0_0"),
], ids=["delay blank", "delay underscore", "real qid blank", "real qid underscore"])
def test_a_commit_whose_half_has_a_delay_or_real_qid_that_is_no_java_int_is_a_system_error(
        cluster: LocalCluster, conn: RawConnection, props: dict[str, str], bad: str) -> None:
    # before: int() read them, and the message was committed (and " 3" scheduled)
    uniq = "UNIQ-" + bad.strip().replace("_", "u") + str(len(props)) + next(iter(props))
    queue_offset, commit_log_offset = _half(cluster, uniq, **props)
    before = len(stored_messages(cluster, TOPIC, queues=1))
    ops = len(stored_messages(cluster, OP_TOPIC, queues=1))
    answer = conn.request(RequestCode.END_TRANSACTION, {
        "producerGroup": GROUP, "tranStateTableOffset": str(queue_offset), "commitLogOffset": str(commit_log_offset),
        "commitOrRollback": "8", "fromTransactionCheck": "false", "msgId": uniq, "transactionId": uniq})
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, f'{NFE}{bad}"')
    assert len(stored_messages(cluster, TOPIC, queues=1)) == before
    assert nothing_scheduled(cluster)
    assert len(stored_messages(cluster, OP_TOPIC, queues=1)) == ops, "the half message stays open"


# --- replies -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [" 3", "3_0", "abc"])
def test_a_reply_whose_delay_is_no_java_int_is_a_system_error_and_not_stored(
        cluster: LocalCluster, conn: RawConnection, delay: str) -> None:
    # before: the answer named the failed push and int() scheduled " 3" / "3_0" (stored "abc" at once)
    reply_topic = "DefaultCluster_REPLY_TOPIC"
    before = len(stored_messages(cluster, reply_topic, queues=1))
    props = {"MSG_TYPE": "reply", "CORRELATION_ID": "c-" + delay, PropertyName.DELAY: delay}
    header = SendMessageRequestHeader(
        producer_group="replier", topic=reply_topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties=encode_properties(props), reconsume_times=0, unit_mode=False, batch=False)
    answer = conn.request(RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext_fields_v2(), b"re")
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, f'{NFE}{delay}"')
    assert len(stored_messages(cluster, reply_topic, queues=1)) == before
    assert nothing_scheduled(cluster)
