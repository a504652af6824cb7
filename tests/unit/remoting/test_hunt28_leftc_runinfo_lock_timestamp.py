"""A running info whose lastLockTimestamp is past a Java long: librocketmq (the C++ client, PyPI rocketmq
0.4.4) sends a queue's never-set lastLockTimestamp as the decimal string of whatever its memory held.
4.9.3's fastjson 1.2.48 refuses the whole body for a value past a long ("com.alibaba.fastjson.JSONException:
parseLong error, field : lastLockTimestamp", for "18446744073709551615" and for a bare 30-digit number
alike), and so did ours (ProtocolError): consumerStatus and the exporter showed nothing of that consumer.
That one value now reads as 0 (unknown); the rest of the running info shows, and every other field stays
as strict."""

from __future__ import annotations

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo


def _queue(queue_id: int, last_lock: bytes) -> bytes:
    # one mqTable entry as librocketmq 0.4.4 writes it (captured from it consuming from our broker)
    return (b'{\n   "brokerName" : "vm",\n   "queueId" : ' + str(queue_id).encode()
            + b',\n   "topic" : "LeftcCpp"\n}:{\n'
            b'   "cachedMsgCount" : 0,\n   "cachedMsgMaxOffset" : "0",\n   "cachedMsgMinOffset" : "0",\n'
            b'   "commitOffset" : "1",\n   "droped" : false,\n   "lastConsumeTimestamp" : "1795888517146",\n'
            b'   "lastLockTimestamp" : ' + last_lock + b',\n   "lastPullTimestamp" : "1795888532150",\n'
            b'   "locked" : false,\n   "transactionMsgCount" : 0,\n   "transactionMsgMaxOffset" : "0",\n'
            b'   "transactionMsgMinOffset" : "0",\n   "tryUnlockTimes" : 0\n}')


def _body(last_lock: bytes) -> bytes:
    # the captured answer (queue 0's "140142104471792", garbage that fits a long, replaced by *last_lock*)
    return (b'{"mqTable":{' + _queue(0, last_lock) + b'\n,' + _queue(1, b'"4189019907917050914"') + b'\n},'
            b'"jstack":"","properties":{"PROP_CLIENT_VERSION":"V3_1_8","PROP_CONSUMEORDERLY":"flase",'
            b'"PROP_CONSUMER_START_TIMESTAMP":"1795888517125","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",'
            b'"PROP_NAMESERVER_ADDR":"127.0.0.1:42501","PROP_THREADPOOL_CORE_SIZE":"2"},'
            b'"subscriptionSet":[{"subString":"*","subVersion":"1795888517127","topic":"%RETRY%leftc-cpp"},'
            b'{"subString":"*","subVersion":"1795888517127","topic":"LeftcCpp"}]}\n')


@pytest.mark.parametrize("last_lock", [b'"18446744073709551615"', b"18446744073709551615",
                                       b"123456789012345678901234567890", b'"-9223372036854775809"'])
def test_a_lock_timestamp_past_a_long_reads_as_unknown(last_lock: bytes) -> None:
    info = ConsumerRunningInfo.decode(_body(last_lock))
    assert sorted(info.mq_table) == [("LeftcCpp", "vm", 0), ("LeftcCpp", "vm", 1)]
    queue0 = info.mq_table[("LeftcCpp", "vm", 0)]
    assert queue0.last_lock_timestamp == 0
    assert (queue0.commit_offset, queue0.last_pull_timestamp) == (1, 1795888532150)
    # garbage too, but within a long: kept as sent
    assert info.mq_table[("LeftcCpp", "vm", 1)].last_lock_timestamp == 4189019907917050914
    assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert [s.topic for s in info.subscriptions] == ["%RETRY%leftc-cpp", "LeftcCpp"]


def test_the_captured_body_reads_as_sent() -> None:
    info = ConsumerRunningInfo.decode(_body(b'"140142104471792"'))
    assert info.mq_table[("LeftcCpp", "vm", 0)].last_lock_timestamp == 140142104471792


@pytest.mark.parametrize("last_lock", [b'"soon"', b"[]", b"{}"])
def test_a_lock_timestamp_that_is_no_whole_number_is_still_refused(last_lock: bytes) -> None:
    with pytest.raises(ProtocolError):
        ConsumerRunningInfo.decode(_body(last_lock))


def test_other_fields_past_a_long_are_still_refused() -> None:
    body = _body(b'"0"').replace(b'"commitOffset" : "1"', b'"commitOffset" : "18446744073709551615"', 1)
    with pytest.raises(ProtocolError):
        ConsumerRunningInfo.decode(body)
