"""A send to ``%RETRY%<group>`` that has used up its retries goes to ``%DLQ%<group>``; as 4.9.3's
SendMessageProcessor.handleRetryAndDLQ, the dead letter's MULTI_TAGS sysFlag bit follows the filter type of
the %DLQ% topic it is stored in (handleRetryAndDLQ replaces its topicConfig with the %DLQ% one before it reads
getTopicFilterType), not that of the %RETRY% topic the request named."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster, run_within

from rocketstore.message.properties import encode_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.bodies import Perm, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 60.0
RW = Perm.READ | Perm.WRITE


def _send_used_up_retry(cluster: LocalCluster, group: str) -> int:
    """Send one message to %RETRY%<group> with reconsumeTimes 16 (the default retryMaxTimes): a dead letter;
    the sysFlag of the record stored in %DLQ%<group>."""
    async def go() -> RemotingCommand:
        header = SendMessageRequestHeader(
            producer_group="hunt22-dlq-producer", topic="%RETRY%" + group, default_topic="TBW102",
            default_topic_queue_nums=4, queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000),
            flag=0, properties=encode_properties({"RETRY_TOPIC": "Hunt22Origin"}), reconsume_times=16,
            unit_mode=False, batch=False)
        pool = ConnectionPool()
        try:
            return await pool.request(cluster.broker_addr, RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, header.to_ext_fields_v2(), b"dead"), 5)
        finally:
            await pool.close()

    answer = run_within(go, TEST_TIMEOUT_S)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    cluster.wait_dispatched()
    [dead] = cluster.call(lambda: cluster.broker.store.get("%DLQ%" + group, 0, 0, 8).messages)
    assert dead.body == b"dead"
    return dead.sys_flag


def test_a_dead_letter_takes_the_multi_tags_flag_of_the_dlq_topic_not_the_retry_topic(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        topics = cluster.broker.topics
        # a MULTI_TAG %RETRY% topic, its %DLQ% topic created by the send (SINGLE_TAG): no flag
        cluster.call(lambda: topics.update(TopicConfig("%RETRY%hunt22-multi-retry", 1, 1, RW, "MULTI_TAG")))
        assert _send_used_up_retry(cluster, "hunt22-multi-retry") & SysFlag.MULTI_TAGS == 0
        # a SINGLE_TAG %RETRY% topic whose existing %DLQ% topic is MULTI_TAG: the flag
        cluster.call(lambda: topics.update(TopicConfig("%RETRY%hunt22-multi-dlq", 1, 1, RW, "SINGLE_TAG")))
        cluster.call(lambda: topics.update(TopicConfig("%DLQ%hunt22-multi-dlq", 1, 1, RW, "MULTI_TAG")))
        assert _send_used_up_retry(cluster, "hunt22-multi-dlq") & SysFlag.MULTI_TAGS == SysFlag.MULTI_TAGS
