"""CONSUMER_SEND_MSG_BACK (what a C++ push consumer sends for RECONSUME_LATER) and its dead letters, compared
with 4.9.3's SendMessageProcessor.asyncConsumerSendMsgBack:

* a message sent to ``%DLQ%<group>`` gets ``setDelayTimeLevel(0)``: its record carries ``DELAY=0`` (and is
  stored at once, level 0 being no delay);
* the ``%DLQ%`` topic's perm is not checked (createTopicInSendMessageBackMethod returns the existing topic and
  only the ``%RETRY%`` topic's perm is checked): a dead letter is stored in a read-only DLQ.

Requests are sent over a raw connection, as the C++ client frames them, so that each case takes a moment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored
from test_bad_input import RawConnection, pull_ext, send_ext

from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import Perm, TopicConfig
from rocketstore.remoting.transport import run

TOPIC = "SendBackTopic"
#: every delay level 1 s, so a retry comes back quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def make_group(conn: RawConnection, group: str, **fields: object) -> None:
    body = json.dumps({"groupName": group, **fields}).encode()
    made = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert made.code == ResponseCode.SUCCESS, made.remark


def send_one(conn: RawConnection) -> str:
    """A message with tags, keys and a user property; its commitlog offset."""
    props = encode_properties({"TAGS": "T", "KEYS": "k1", "UNIQ_KEY": "0A0000010000AAAA0000000000000001",
                               "color": "red", "WAIT": "true"})
    sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(TOPIC, i=props), b"body-1")
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    return str(int(sent.ext_fields["msgId"][-16:], 16))


def send_back(conn: RawConnection, offset: str, group: str, delay_level: int) -> None:
    back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": offset, "group": group, "delayLevel": str(delay_level),
        "originMsgId": "0A0000010000AAAA0000000000000001", "originTopic": TOPIC})
    assert (back.code, back.remark) == (ResponseCode.SUCCESS, None)


@pytest.mark.parametrize("how", ["negative delay level", "retries used up"])
def test_a_dead_letter_carries_delay_0_and_is_stored_at_once(cluster: LocalCluster, how: str) -> None:
    group = "send-back-dlq-group"
    conn = RawConnection(cluster.broker_addr)
    try:
        make_group(conn, group, retryMaxTimes=0 if how == "retries used up" else 16)
        offset = send_one(conn)
        send_back(conn, offset, group, -1 if how == "negative delay level" else 0)
        [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    finally:
        conn.close()
    props = dead.properties
    assert props["DELAY"] == "0", f"4.9.3's setDelayTimeLevel(0) is in the record: {dead.properties_string!r}"
    assert (props["RETRY_TOPIC"], props["WAIT"], props["color"], props["KEYS"]) == (TOPIC, "false", "red", "k1")
    assert props["ORIGIN_MESSAGE_ID"] and "REAL_TOPIC" not in props, "stored at once, never scheduled"
    assert (dead.queue_id, dead.reconsume_times, dead.body) == (0, 1, b"body-1")
    assert stored_messages(cluster, "SCHEDULE_TOPIC_XXXX", queues=18) == []


def test_a_retry_sent_back_again_gets_the_new_delay_level(cluster: LocalCluster) -> None:
    """The retry record (which keeps the DELAY of its first trip) given back again: DELAY is the new level."""
    group = "send-back-again-group"
    conn = RawConnection(cluster.broker_addr)
    try:
        make_group(conn, group)
        send_back(conn, send_one(conn), group, 2)
        [retry] = wait_stored(cluster, "%RETRY%" + group, 1, "the first retry", queues=1)
        assert retry.properties["DELAY"] == "2"
        send_back(conn, str(retry.commit_log_offset), group, 0)  # 3 + reconsumeTimes (1)
        retries = wait_stored(cluster, "%RETRY%" + group, 2, "the second retry", queues=1)
    finally:
        conn.close()
    again = retries[1]
    assert (again.properties["DELAY"], again.reconsume_times) == ("4", 2)
    assert again.properties["ORIGIN_MESSAGE_ID"] == retry.properties["ORIGIN_MESSAGE_ID"]


def test_a_dead_letter_is_stored_in_a_dlq_that_is_not_writable(cluster: LocalCluster) -> None:
    """4.9.3 checks the perm of the %RETRY% topic only: a %DLQ% topic made read-only (as an operator may, so
    that nobody sends to it) still takes the group's dead letters.  Refusing them made the consumer's
    send-back fail for good: the C++ client then consumes the message again and again locally."""
    group = "send-back-readonly-dlq-group"
    dlq = "%DLQ%" + group
    conn = RawConnection(cluster.broker_addr)
    try:
        make_group(conn, group)
        cluster.call(lambda: cluster.broker.topics.update(TopicConfig(dlq, 1, 1, Perm.READ)))
        send_back(conn, send_one(conn), group, -1)
        [dead] = wait_stored(cluster, dlq, 1, "the dead letter", queues=1)
    finally:
        conn.close()
    assert dead.body == b"body-1" and dead.properties["RETRY_TOPIC"] == TOPIC
    assert cluster.call(lambda: cluster.broker.topics.get(dlq)).perm == Perm.READ, "the topic is left as it was"


def test_a_send_to_the_retry_topic_past_max_reconsume_times_is_stored_in_a_dlq_that_is_not_writable(
        cluster: LocalCluster) -> None:
    """The other way to the DLQ (a client whose send-back failed sends a copy to %RETRY%<group> with its
    reconsume count): 4.9.3's handleRetryAndDLQ does not check the %DLQ% topic's perm either."""
    group = "send-retry-readonly-dlq-group"
    dlq = "%DLQ%" + group
    conn = RawConnection(cluster.broker_addr)
    try:
        make_group(conn, group, retryMaxTimes=2)
        cluster.call(lambda: cluster.broker.topics.update(TopicConfig(dlq, 1, 1, Perm.READ)))
        props = encode_properties({"TAGS": "T", "RETRY_TOPIC": TOPIC, "WAIT": "true"})
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("%RETRY%" + group, i=props, j="2"), b"body-2")
        assert (sent.code, sent.remark) == (ResponseCode.SUCCESS, None)
        [dead] = wait_stored(cluster, dlq, 1, "the dead letter", queues=1)
    finally:
        conn.close()
    assert (dead.body, dead.reconsume_times, dead.properties["RETRY_TOPIC"]) == (b"body-2", 2, TOPIC)


@pytest.mark.parametrize("perm", [Perm.READ, Perm.WRITE])
def test_a_broker_without_the_perm_names_its_address_in_the_refusal(cluster: LocalCluster, perm: int) -> None:
    """4.9.3 names the broker by brokerIP1 when it refuses a send-back (not writable) or a pull (not
    readable), as it does for sends: "the broker[127.0.0.1] ... is forbidden", not its broker name."""
    group = "send-back-perm-group"
    conn = RawConnection(cluster.broker_addr)
    try:
        make_group(conn, group)
        offset = send_one(conn)

        async def wipe() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_broker_config({"brokerPermission": str(perm)}, broker_addr=cluster.broker_addr)

        run(wipe())
        if perm == Perm.READ:
            answer = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": offset, "group": group, "delayLevel": "0", "originMsgId": "x", "originTopic": TOPIC})
            expected = "the broker[127.0.0.1] sending message is forbidden"
        else:
            answer = conn.request(RequestCode.PULL_MESSAGE, pull_ext(TOPIC, group))
            expected = "the broker[127.0.0.1] pulling message is forbidden"
    finally:
        conn.close()
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, expected)
