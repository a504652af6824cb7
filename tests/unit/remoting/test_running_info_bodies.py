"""ConsumerRunningInfo and ConsumeMessageDirectlyResult bodies: ours round-trip, and what other clients send
(the C++ client's pretty-printed, object-keyed JSON with numbers as strings) is read."""

from __future__ import annotations

from rocketstore.remoting.bodies import build_subscription
from rocketstore.remoting.consumer_bodies import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeStatusInfo,
    ProcessQueueInfo,
)

CPP_BODY = (b'{"mqTable":{{\n   "brokerName" : "broker-a",\n   "queueId" : 1,\n   "topic" : "T"\n}:{\n'
            b'   "cachedMsgCount" : 3,\n   "cachedMsgMaxOffset" : "9",\n   "cachedMsgMinOffset" : "7",\n'
            b'   "commitOffset" : "7",\n   "droped" : false,\n   "lastConsumeTimestamp" : "1795348064675",\n'
            b'   "lastLockTimestamp" : "0",\n   "lastPullTimestamp" : "1795348064675",\n   "locked" : true,\n'
            b'   "transactionMsgCount" : 0,\n   "transactionMsgMaxOffset" : "0",\n'
            b'   "transactionMsgMinOffset" : "0",\n   "tryUnlockTimes" : 0\n}\n},"jstack":"",'
            b'"properties":{"PROP_CLIENT_VERSION":"V3_1_8","PROP_CONSUMEORDERLY":"flase",'
            b'"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_THREADPOOL_CORE_SIZE":"2"},'
            b'"subscriptionSet":[{"subString":"*","subVersion":"1795348064662","topic":"T"}]}\n')


def test_our_running_info_round_trips_with_the_mq_table_keyed_by_queue_objects() -> None:
    info = ConsumerRunningInfo(
        {"consumerGroup": "g", ConsumerRunningInfo.PROP_CONSUME_TYPE: "CONSUME_PASSIVELY"},
        (build_subscription("%RETRY%g", "*", 5), build_subscription("T", "A || B", 5)),  # TreeSet order
        {("T", "b", 1): ProcessQueueInfo(commit_offset=12, cached_msg_count=2, locked=True, dropped=True),
         ("T", "b", 0): ProcessQueueInfo(last_pull_timestamp=1_700_000_000_000)},
        {"T": ConsumeStatusInfo(1.5, 2.25, 3.0, 4.0, 0.5, 7)}, "stack")
    body = info.encode()
    assert b'{{"brokerName":"b","queueId":0,"topic":"T"}:{' in body
    assert b'"droped":true' in body
    assert ConsumerRunningInfo.decode(body) == info


def test_the_cpp_clients_running_info_is_read() -> None:
    info = ConsumerRunningInfo.decode(CPP_BODY)
    q = info.mq_table[("T", "broker-a", 1)]
    assert (q.commit_offset, q.cached_msg_count, q.cached_msg_min_offset, q.cached_msg_max_offset) == (7, 3, 7, 9)
    assert q.locked and not q.dropped and q.last_pull_timestamp == 1795348064675
    assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert [(s.topic, s.sub_version) for s in info.subscriptions] == [("T", 1795348064662)]
    assert info.status_table == {} and info.jstack == ""


def test_consume_directly_result_round_trips() -> None:
    for result in (ConsumeMessageDirectlyResult(CMResult.SUCCESS, spent_time_ms=3),
                   ConsumeMessageDirectlyResult(CMResult.THROW_EXCEPTION, order=True, remark="boom"),
                   ConsumeMessageDirectlyResult(None)):
        assert ConsumeMessageDirectlyResult.decode(result.encode()) == result
    assert ConsumeMessageDirectlyResult.decode(b'{"consumeResult":"CR_LATER"}').auto_commit
