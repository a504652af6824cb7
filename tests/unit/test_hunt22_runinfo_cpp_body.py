"""The running info librocketmq (the C++ client) sends while it holds no queue: ``"mqTable":}``."""

from __future__ import annotations

from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo

# the shape rocketmq 0.4.4's librocketmq answers with (the real one: test_hunt22_runinfo_cpp_idle)
IDLE_CPP_BODY = (b'{"mqTable":},"jstack":"","properties":{"PROP_CLIENT_VERSION":"V3_1_8",'
                 b'"PROP_CONSUMEORDERLY":"flase","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",'
                 b'"PROP_THREADPOOL_CORE_SIZE":"2"},'
                 b'"subscriptionSet":[{"subString":"*","subVersion":"1795348064662","topic":"T"}]}\n')


def test_an_idle_cpp_consumers_running_info_is_read_with_an_empty_mq_table() -> None:
    info = ConsumerRunningInfo.decode(IDLE_CPP_BODY)
    assert info.mq_table == {}
    assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert [s.topic for s in info.subscriptions] == ["T"]
