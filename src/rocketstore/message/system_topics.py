"""The topic names RocketMQ 4.9.3 reserves (TopicValidator's system topic set and its ``rmq_sys_`` prefix, and
the retry and dead-letter topics of consumer groups): one definition for the broker, which refuses to
create or delete system topics through admin requests, the clients and admin tools, and the Spark source,
which reads system topics only when asked by name.

A broker adds its own to these at start (its cluster and broker name topics, ``<cluster>_REPLY_TOPIC``, a
custom trace topic), as 4.9.3's TopicConfigManager does with TopicValidator.addSystemTopic.

No I/O; safe from any thread.
"""

from __future__ import annotations

__all__ = ["DLQ_GROUP_TOPIC_PREFIX", "RETRY_GROUP_TOPIC_PREFIX", "SCHEDULE_TOPIC", "SYSTEM_TOPICS",
           "SYSTEM_TOPIC_PREFIX", "is_system_topic"]

#: a consumer group's retry topic is this and the group's name (MixAll.RETRY_GROUP_TOPIC_PREFIX)
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
#: a consumer group's dead-letter topic is this and the group's name (MixAll.DLQ_GROUP_TOPIC_PREFIX)
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"

#: where delayed messages wait for their time (one queue per delay level)
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

#: a topic starting with this is a system topic, whatever its name
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
#: TopicValidator.SYSTEM_TOPIC_SET as 4.9.3 declares it
SYSTEM_TOPICS = frozenset({
    "TBW102", SCHEDULE_TOPIC, "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
})


def is_system_topic(topic: str) -> bool:
    """One of 4.9.3's system topics, or a name with its ``rmq_sys_`` prefix."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)
