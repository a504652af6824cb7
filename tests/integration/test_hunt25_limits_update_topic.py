"""UPDATE_AND_CREATE_TOPIC refuses a queue count above MAX_QUEUE_NUMS (16,384), as 4.9.3 refuses a bad topic
name: SYSTEM_ERROR and a remark saying the limit; the topic is not created, so no per-queue request (a
QUERY_CONSUME_TIME_SPAN, GET_TOPIC_STATS_INFO) can loop over 2^31 queues.

Captured from 4.9.3 on raw sockets: writeQueueNums 2147483647 answered SUCCESS (code 0, remark "not set any
response code": it took it); topic "bad name" answered code 1 (SYSTEM_ERROR), remark "The specified topic
contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$".  A real name server and broker, port 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import send_ext

from rocketstore.broker import retry
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import connect

#: the longest topic name 4.9.3 takes: the per-queue answers of a topic at the cap are at their largest
EDGE = "E" * 127
JAVA_BAD_NAME = (1, "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")


async def _ask(broker_addr: str, code: int, ext: dict[str, str]) -> tuple[int, str | None]:
    conn = await connect(broker_addr)
    try:
        answer = await conn.request(RemotingCommand.request(code, ext), 10)
        return answer.code, answer.remark
    finally:
        conn.close()


def _create(topic: str, read: int, write: int) -> dict[str, str]:
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(read), "writeQueueNums": str(write),
            "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}


def test_a_queue_count_above_the_cap_is_refused_as_a_bad_name_is(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        addr = cluster.broker_addr
        bad_name = cluster.run(_ask(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("bad name", 4, 4)))
        huge = cluster.run(_ask(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Big", 4, 2**31 - 1)))
        read = cluster.run(_ask(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Big", 16_385, 4)))
        edge = cluster.run(_ask(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, _create(EDGE, 16_384, 16_384)))
        # the largest per-queue answer of a topic at the cap still fits one frame (at 65,536 queues it did not)
        edge_span = cluster.run(_ask(addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": EDGE, "group": "g"}))
        big_held = cluster.broker.topics.get("Big")
        # (asked only when the topic was refused: over 2^31 queues it would run out of memory)
        span = None if big_held is not None else cluster.run(
            _ask(addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "Big", "group": "g"}))
        edge_held = cluster.broker.topics.get(EDGE)
    assert bad_name == JAVA_BAD_NAME
    assert huge == (ResponseCode.SYSTEM_ERROR,
                    "The specified writeQueueNums [2147483647] is too large, allowing at most 16384 queues.")
    assert read == (ResponseCode.SYSTEM_ERROR,
                    "The specified readQueueNums [16385] is too large, allowing at most 16384 queues.")
    assert big_held is None
    assert span == (ResponseCode.TOPIC_NOT_EXIST, "topic[Big] not exist")
    assert edge[0] == ResponseCode.SUCCESS
    assert edge_span == (ResponseCode.SUCCESS, None)
    assert edge_held is not None and (edge_held.read_queue_nums, edge_held.write_queue_nums) == (16_384, 16_384)


def test_a_send_back_of_a_group_with_huge_retry_queue_nums_lands_in_a_queue_consumers_pull(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """retryQueueNums 2147483647 is a Java int, so a group takes it (as 4.9.3 does); its %RETRY% topic is made
    with MAX_QUEUE_NUMS queues, and the send-back picks a queue among those, not one past them where no
    consumer of the topic's route pulls."""
    bounds: list[int] = []

    class Recording:
        @staticmethod
        def randrange(stop: int) -> int:
            bounds.append(stop)
            return stop - 1  # the last queue id of the range asked for

    monkeypatch.setattr(retry, "random", Recording)
    with LocalCluster(tmp_path / "store") as cluster:
        addr = cluster.broker_addr

        async def scenario() -> tuple[int, int, int]:
            conn = await connect(addr)
            try:
                sent = await conn.request(RemotingCommand.request(
                    RequestCode.SEND_MESSAGE_V2, send_ext("PlainTopic"), body=b"x"), 10)
                group = await conn.request(RemotingCommand.request(
                    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                    body=json.dumps({"groupName": "wide-group", "retryQueueNums": 2**31 - 1}).encode()), 10)
                back = await conn.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                    "offset": str(int(sent.ext_fields["msgId"][-16:], 16)), "group": "wide-group",
                    "delayLevel": "0", "originMsgId": "x", "originTopic": "PlainTopic"}), 10)
                return sent.code, group.code, back.code
            finally:
                conn.close()

        codes = cluster.run(scenario())
        made = cluster.broker.topics.get("%RETRY%wide-group")
    assert codes == (ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    assert made is not None and (made.read_queue_nums, made.write_queue_nums) == (16_384, 16_384)
    assert bounds == [16_384]
