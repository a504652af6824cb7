"""The lite pull consumer against 4.9.3's DefaultLitePullConsumer (hunt 26, fixlite):

* GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus -i``) carries the properties 4.9.3's answer carries:
  ours lacked pollTimeoutMillis, enableMsgTrace, topicMetadataCheckIntervalMillis, consumeTimestamp,
  unitMode and the three MQClientInstance adds (PROP_NAMESERVER_ADDR, PROP_CONSUME_TYPE, PROP_CLIENT_VERSION);
* its trace names the topic without the namespace (4.9.3's consume hook strips it), as the push consumer's;
* a start that fails keeps its own error when closing the trace fails too.
"""

from __future__ import annotations

import asyncio

from rocketstore.client.lite_pull_consumer import LitePullConsumer
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_types import ConsumedMessage, ConsumeFromWhere
from rocketstore.client.route import MessageQueue
from rocketstore.client.trace import TraceContext, TraceType
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo

from .test_hunt26_push_start_and_status import start_keeps_the_offsets_error_when_closing_the_trace_fails

NAMESRV = "127.0.0.1:9"

#: the property names of 4.9.3's answer for a running DefaultLitePullConsumer (group lite-g1, subscribe
#: mode, setEnableMsgTrace(true), setPollTimeoutMillis(1000), CONSUME_FROM_FIRST_OFFSET), captured from
#: ``mqadmin consumerStatus -i`` against a 4.9.3 broker, with their values where they are settings
JAVA_LITE_PROPERTIES = {
    "consumeTimestamp": None, "pullBatchSize": "10", "traceDispatcher": None, "enableMsgTrace": "true",
    "log": None, "defaultLitePullConsumerImpl": None, "pullThresholdForQueue": "1000",
    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "consumeMaxSpan": "2000",
    "PROP_NAMESERVER_ADDR": "127.0.0.1:51876;", "unitMode": "false", "messageQueueListener": None,
    "brokerSuspendMaxTimeMillis": "20000", "autoCommit": "true", "autoCommitIntervalMillis": "5000",
    "PROP_CONSUMER_START_TIMESTAMP": None, "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
    "pollTimeoutMillis": "1000", "offsetStore": None, "PROP_CLIENT_VERSION": "V4_9_3",
    "pullThresholdSizeForQueue": "100", "consumerTimeoutMillisWhenSuspend": "30000",
    "messageModel": "CLUSTERING", "consumerPullTimeoutMillis": "10000",
    "topicMetadataCheckIntervalMillis": "30000", "allocateMessageQueueStrategy": None, "pullThreadNums": "20",
    "pullThresholdForAll": "10000", "consumerGroup": "lite-g1",
}
#: Java objects' toString (no setting of ours to show) and Java settings ours has not
NOT_OURS = {"traceDispatcher", "log", "defaultLitePullConsumerImpl", "messageQueueListener", "offsetStore",
            "pullThreadNums", "consumerPullTimeoutMillis"}


def test_the_running_info_carries_the_properties_of_4_9_3s_answer() -> None:
    consumer = LitePullConsumer("127.0.0.1:51876", "lite-g1", enable_trace=True, poll_timeout_s=1.0,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                consume_timestamp_ms=1_795_863_286_000)
    consumer.subscribe("LiteT1")
    props = consumer.running_info().properties
    missing = set(JAVA_LITE_PROPERTIES) - NOT_OURS - set(props)
    assert missing == set()
    for name, value in JAVA_LITE_PROPERTIES.items():
        if value is not None and name not in NOT_OURS:
            assert props[name] == value, name
    assert len(props["consumeTimestamp"]) == 14 and props["consumeTimestamp"].isdigit()  # yyyyMMddHHmmss
    assert "customizedTraceTopic" not in props  # Java leaves a null out


def test_the_running_info_tells_the_settings_given() -> None:
    consumer = LitePullConsumer("127.0.0.1:1;127.0.0.1:2", "lite-g2", poll_timeout_s=2.5,
                                topic_metadata_check_interval_s=7.0, trace_topic="MyTrace")
    props = consumer.running_info().properties
    assert (props["pollTimeoutMillis"], props["enableMsgTrace"], props["topicMetadataCheckIntervalMillis"],
            props["customizedTraceTopic"]) == ("2500", "false", "7000", "MyTrace")
    assert props[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == "127.0.0.1:1;127.0.0.1:2;"


class _Recorder:
    def __init__(self) -> None:
        self.contexts: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> None:
        self.contexts.append(ctx)


def _message(topic: str, n: int) -> ConsumedMessage:
    return ConsumedMessage(topic, 0, n, b"body", f"MSGID{n}", f"OFFSETID{n}", 0, 100 * n, 1, 2, 0,
                           "broker-a", topic, {"KEYS": f"key-{n}"})


def test_the_trace_of_a_namespaced_consumer_names_the_topic_without_the_namespace() -> None:
    # 4.9.3 (DefaultLitePullConsumer setNamespace("nsF"), group lite-ns-g, topic LiteNs, trace on): the
    # consume hook writes group and topic through NamespaceUtil.withoutNamespace: "lite-ns-g" / "LiteNs"
    async def go() -> None:
        consumer = LitePullConsumer(NAMESRV, "lite-ns-g", enable_trace=True, namespace="nsF")
        recorder = _Recorder()
        consumer.consumption.dispatcher = recorder  # type: ignore[attr-defined]
        pq = ProcessQueue(MessageQueue("nsF%LiteNs", "broker-a", 0))
        batch = [_message("nsF%LiteNs", 0), _message("nsF%LiteNs", 1)]
        consumer.consumption.dispatch(pq, batch)
        before, after = recorder.contexts
        assert (before.trace_type, after.trace_type) == (TraceType.SubBefore, TraceType.SubAfter)
        assert before.group == after.group == "lite-ns-g"
        assert [b.topic for b in before.beans] == [b.topic for b in after.beans] == ["LiteNs", "LiteNs"]
        assert [b.msg_id for b in before.beans] == ["MSGID0", "MSGID1"]
        # the batch waiting for poll() keeps the namespaced topic (poll() strips it when handing it out)
        [(_, waiting)] = consumer.consumption.batches
        assert waiting is batch and waiting[0].topic == "nsF%LiteNs"

    asyncio.run(go())


def test_a_failed_start_keeps_its_error_when_closing_the_trace_fails() -> None:
    async def go() -> None:
        consumer = LitePullConsumer(NAMESRV, "lite-fail-g", enable_trace=True)
        consumer.assign([MessageQueue("T", "broker-a", 0)])
        await start_keeps_the_offsets_error_when_closing_the_trace_fails(consumer)

    asyncio.run(go())
