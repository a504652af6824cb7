"""Sends straight to a group's retry topic, as ali-ons (npm ``ali-ons`` 3.12.0) makes them when its consumer's
CONSUMER_SEND_MSG_BACK fails (and the Java client's consumer does too), compared with 4.9.3's
SendMessageProcessor.handleRetryAndDLQ and asyncConsumerSendMsgBack:

* the group is looked up with findSubscriptionGroupConfig, which creates it when autoCreateSubscriptionGroup is
  on (the default): a send to ``%RETRY%<group>`` (or a send-back) for a group this broker has not seen yet is
  stored, not refused with SUBSCRIPTION_GROUP_NOT_EXIST;
* a send whose reconsumeTimes reached maxReconsumeTimes goes to ``%DLQ%<group>``; handleRetryAndDLQ's
  setDelayTimeLevel(0) is on a properties map that the request's own properties then replace, so the record
  keeps the DELAY the client sent: ali-ons sends DELAY=0 (stored at once, DELAY=0 in the record), a level > 0
  (the Java client sends 3 + reconsumeTimes) makes the dead letter wait in SCHEDULE_TOPIC_XXXX first.

And any send: CommitLog reads DELAY with Integer.parseInt, so a DELAY that is not a Java int is refused.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored
from ons_driver import OnsClient
from test_bad_input import RawConnection, send_ext

from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import TopicConfig

RUNNER = Path(__file__).resolve().parent / "ons_hunt14_runner.js"
#: every delay level 1 s, so a scheduled dead letter comes out quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as c:
        yield c


def _routed_retry_topic(cluster: LocalCluster, group: str, *, with_group: bool = True) -> None:
    """%RETRY%<group> on the broker and known to the name server (ali-ons sends only along a route); the
    subscription group too unless not *with_group*."""
    def create() -> None:
        cluster.broker.topics.update(TopicConfig("%RETRY%" + group, read_queue_nums=1, write_queue_nums=1))
        if with_group:
            cluster.broker.groups.find_or_create(group)

    cluster.call(create)
    cluster.run(cluster.broker.registrar.register_all())


def _send_retry(ons_client: OnsClient, cluster: LocalCluster, group: str, reconsume_times: int,
                max_reconsume_times: int, delay_level: int, body: str) -> dict[str, Any]:
    done = subprocess.run([ons_client.node, str(RUNNER), "send-retry", cluster.namesrv_addr, group,
                           str(reconsume_times), str(max_reconsume_times), str(delay_level), body],
                          capture_output=True, text=True, timeout=90, env=ons_client._env(None), check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the ali-ons runner printed nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    return lines[-1]


def test_an_ali_ons_send_to_the_retry_topic_of_a_group_the_broker_has_not_seen_creates_the_group(
        cluster: LocalCluster, ons_client: OnsClient) -> None:
    group = "ons-unseen-group"
    _routed_retry_topic(cluster, group, with_group=False)
    assert cluster.call(lambda: cluster.broker.groups.get(group)) is None
    sent = _send_retry(ons_client, cluster, group, 1, 16, 0, "again")
    assert sent.get("status") == "SEND_OK", f"4.9.3 auto-creates the subscription group: {sent}"
    [stored] = wait_stored(cluster, "%RETRY%" + group, 1, "the retry message", queues=1)
    assert (stored.body, stored.reconsume_times, stored.properties["RETRY_TOPIC"]) == (b"again", 1, "OnsOriginTopic")
    made = cluster.call(lambda: cluster.broker.groups.get(group))
    assert made is not None and made.retry_max_times == 16


def test_an_ali_ons_dead_letter_sent_with_delay_0_keeps_delay_0_in_its_record(
        cluster: LocalCluster, ons_client: OnsClient) -> None:
    group = "ons-dlq-group"
    _routed_retry_topic(cluster, group)
    sent = _send_retry(ons_client, cluster, group, 3, 2, 0, "dead-now")
    assert sent.get("status") == "SEND_OK", sent
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    assert dead.properties.get("DELAY") == "0", \
        f"the request's DELAY=0 stays in the record, as 4.9.3 writes it: {dead.properties_string!r}"
    assert (dead.body, dead.queue_id, dead.reconsume_times) == (b"dead-now", 0, 3)
    assert "REAL_TOPIC" not in dead.properties, "level 0: stored at once"
    assert stored_messages(cluster, "%RETRY%" + group, queues=1) == []


def test_an_ali_ons_dead_letter_sent_with_a_delay_level_waits_in_the_schedule_topic_first(
        cluster: LocalCluster, ons_client: OnsClient) -> None:
    group = "ons-dlq-delayed-group"
    _routed_retry_topic(cluster, group)
    sent = _send_retry(ons_client, cluster, group, 3, 2, 1, "dead-later")
    assert sent.get("status") == "SEND_OK", sent
    [waiting] = wait_stored(cluster, "SCHEDULE_TOPIC_XXXX", 1, "the dead letter waiting for its level", queues=1)
    assert (waiting.properties["REAL_TOPIC"], waiting.properties["REAL_QID"], waiting.properties["DELAY"]) == \
        ("%DLQ%" + group, "0", "1")
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter after its delay", queues=1)
    assert (dead.body, dead.queue_id, dead.reconsume_times) == (b"dead-later", 0, 3)
    assert dead.properties["RETRY_TOPIC"] == "OnsOriginTopic"


def test_a_send_back_for_a_group_the_broker_has_not_seen_creates_the_group(cluster: LocalCluster) -> None:
    """CONSUMER_SEND_MSG_BACK looks the group up with findSubscriptionGroupConfig too."""
    topic, group = "SendBackOrigin", "send-back-unseen-group"
    cluster.call(lambda: cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=1, write_queue_nums=1)))
    conn = RawConnection(cluster.broker_addr)
    try:
        sent = conn.request(RequestCode.SEND_MESSAGE_V2,
                            send_ext(topic, i=encode_properties({"TAGS": "T", "WAIT": "true"})), b"body-1")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        offset = str(int(sent.ext_fields["msgId"][-16:], 16))
        back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
            "offset": offset, "group": group, "delayLevel": "-1", "originMsgId": sent.ext_fields["msgId"],
            "originTopic": topic})
    finally:
        conn.close()
    assert (back.code, back.remark) == (ResponseCode.SUCCESS, None), "4.9.3 auto-creates the subscription group"
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    assert (dead.body, dead.reconsume_times) == (b"body-1", 1)
    assert cluster.call(lambda: cluster.broker.groups.get(group)) is not None


@pytest.mark.parametrize("delay", ["1.5", "2 ", "99999999999"])
def test_an_ali_ons_send_whose_delay_level_is_not_a_java_int_is_refused_and_stores_nothing(
        cluster: LocalCluster, ons_client: OnsClient, delay: str) -> None:
    """4.9.3's CommitLog reads DELAY with Integer.parseInt: a DELAY such as "1.5" (ali-ons writes
    ``msg.delayTimeLevel = 1.5`` as that text) throws, and the send is answered SYSTEM_ERROR; it is neither
    delivered at once nor scheduled."""
    topic = "OnsDelayTextTopic"
    cluster.call(lambda: cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=1, write_queue_nums=1)))
    cluster.run(cluster.broker.registrar.register_all())
    done = subprocess.run([ons_client.node, str(RUNNER), "send-delay", cluster.namesrv_addr, topic, delay, "x"],
                          capture_output=True, text=True, timeout=90, env=ons_client._env(None), check=False)
    [answer] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert "error" in answer and "status" not in answer, answer
    cluster.wait_dispatched()
    assert stored_messages(cluster, topic, queues=1) == []
    assert stored_messages(cluster, "SCHEDULE_TOPIC_XXXX", queues=18) == []
    assert cluster.call(lambda: cluster.broker.put_count) == 0


def test_a_dead_letter_send_is_answered_with_the_retry_queue_it_asked_for(cluster: LocalCluster) -> None:
    """handlePutMessageResult answers the queue id of the request (the %RETRY% queue the client chose), not
    the %DLQ% queue 0 the message went to; the offset is the one in the DLQ queue."""
    group = "dlq-answer-group"

    def create() -> None:
        cluster.broker.groups.find_or_create(group)
        cluster.broker.topics.update(TopicConfig("%RETRY%" + group, read_queue_nums=4, write_queue_nums=4))

    cluster.call(create)
    conn = RawConnection(cluster.broker_addr)
    try:
        props = encode_properties({"RETRY_TOPIC": "Origin", "DELAY": "0", "WAIT": "true"})
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("%RETRY%" + group, 3, i=props, j="3", l="2"),
                            b"dead")
    finally:
        conn.close()
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert (sent.ext_fields["queueId"], sent.ext_fields["queueOffset"]) == ("3", "0")
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    assert (dead.queue_id, dead.body) == (0, b"dead")
