"""The broker's topic configs (RocketMQ's TopicConfigManager): config/topics.json, system topics, auto-create.

File: ``{"dataVersion":{"counter":n,"timestamp":ms},"topicConfigTable":{"<topic>":TopicConfig,...}}``.
System topics are created as 4.9.3 creates them (SELF_TEST_TOPIC, TBW102 when autoCreateTopicEnable with
defaultTopicQueueNums queues and perm 7, BenchmarkTest, the cluster-name and broker-name topics,
OFFSET_MOVED_EVENT, SCHEDULE_TOPIC_XXXX, ``<cluster>_REPLY_TOPIC``, the trace topic when enabled); the file's
entries override them.  Every change bumps the data version and is persisted: at once without a running
loop, else by a write off the loop (config_files.BackgroundWriter) that :meth:`TopicTable.flush` awaits.

Thread-safety: none; used from the broker's event loop.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.config_files import VersionedTable
from rocketstore.config_json import topic_config_entry
from rocketstore.message.names import NAME_CHARS, TOPIC_MAX_LENGTH, group_problem
from rocketstore.message.system_topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    is_system_topic,
)
from rocketstore.remoting.bodies import Perm, TopicConfig
from rocketstore.remoting.headers import MAX_QUEUE_NUMS

log = logging.getLogger(__name__)

__all__ = [
    "AUTO_CREATE_TOPIC",
    "DLQ_GROUP_TOPIC_PREFIX",
    "OFFSET_MOVED_EVENT",
    "RETRY_GROUP_TOPIC_PREFIX",
    "SCHEDULE_TOPIC",
    "SYSTEM_TOPIC_PREFIX",
    "TopicTable",
    "dlq_topic",
    "group_problem",
    "retry_topic",
    "topic_problem",
]

AUTO_CREATE_TOPIC = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC_QUEUE_NUMS = 18


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def topic_problem(topic: str | None) -> str | None:
    """Why *topic* is not a valid topic name (TopicValidator's remarks), or None.

    Every request that names a topic is checked with this at the edge (the charset: message/names.py).
    Groups: :func:`rocketstore.message.names.group_problem`, which a 4.9.3 broker does not apply (it takes
    any group and auto-creates it); we apply the client's rule at the edge so a bad name never reaches a
    config file.
    """
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not NAME_CHARS.issuperset(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


class TopicTable(VersionedTable[TopicConfig]):
    """topic name -> TopicConfig, persisted to ``<root>/config/topics.json``."""

    def __init__(self, config: BrokerConfig, config_dir: str) -> None:
        super().__init__(os.path.join(config_dir, "topics.json"), "topicConfigTable", topic_config_entry,
                         lambda tc: tc.topic_name, {})
        self.config = config
        self.system_topics: set[str] = set()
        self._add_system_topics()

    def _system(self, tc: TopicConfig) -> None:
        self.table[tc.topic_name] = tc
        self.system_topics.add(tc.topic_name)

    def is_system_topic(self, topic: str) -> bool:
        """RocketMQ's reserved names (TopicValidator.isSystemTopic) and the ones this broker added at start
        (its cluster and broker names, its reply topic, a custom trace topic)."""
        return topic in self.system_topics or is_system_topic(topic)

    def system_topic_list(self) -> list[str]:
        """What GET_SYSTEM_TOPIC_LIST_FROM_BROKER answers: TopicValidator's set with this broker's additions."""
        return sorted(SYSTEM_TOPICS | self.system_topics)

    def _add_system_topics(self) -> None:
        c = self.config
        self._system(TopicConfig(SELF_TEST_TOPIC, 1, 1))
        if c.auto_create_topic_enable:
            n = c.default_topic_queue_nums
            self._system(TopicConfig(AUTO_CREATE_TOPIC, n, n, Perm.INHERIT | Perm.READ | Perm.WRITE))
        self._system(TopicConfig(BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = Perm.INHERIT | ((Perm.READ | Perm.WRITE) if c.cluster_topic_enable else 0)
        self._system(TopicConfig(c.broker_cluster_name, perm=cluster_perm))
        broker_perm = Perm.INHERIT | ((Perm.READ | Perm.WRITE) if c.broker_topic_enable else 0)
        self._system(TopicConfig(c.broker_name, 1, 1, broker_perm))
        self._system(TopicConfig(OFFSET_MOVED_EVENT, 1, 1))
        self._system(TopicConfig(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUMS, SCHEDULE_TOPIC_QUEUE_NUMS))
        if c.trace_topic_enable:
            self._system(TopicConfig(c.msg_trace_topic_name, 1, 1))
        self._system(TopicConfig(f"{c.broker_cluster_name}_REPLY_TOPIC", 1, 1))

    def load(self) -> None:
        """topics.json's entries over the system topics, each queue count above MAX_QUEUE_NUMS (a hand-edited
        file; 4.9.3 takes it and runs out of memory looping over the queues) clamped with a warning: the
        topic keeps its name, perm and first queues, where leaving it out would have it auto-created anew."""
        super().load()
        if self._clamp_queue_nums("topics.json"):
            self.changed()  # written back clamped: the warning is not repeated at every start

    def replace_all(self, obj: dict[str, Any]) -> bool:
        """A slave's sync from its master (which may be a 4.9.3 broker holding any count): clamped as load,
        and written clamped (the master's data version kept, so the next sync does not take it again)."""
        replaced = super().replace_all(obj)
        if replaced and self._clamp_queue_nums("the master's topic configs"):
            self.writer.changed()
        return replaced

    def _clamp_queue_nums(self, source: str) -> bool:
        """Clamp the table's queue counts to MAX_QUEUE_NUMS; True if one was larger."""
        clamped = False
        for name, tc in list(self.table.items()):
            if tc.read_queue_nums > MAX_QUEUE_NUMS or tc.write_queue_nums > MAX_QUEUE_NUMS:
                log.warning("topic %s in %s has readQueueNums %d, writeQueueNums %d: more than the %d queues a "
                            "topic may have, clamped to %d", name, source, tc.read_queue_nums,
                            tc.write_queue_nums, MAX_QUEUE_NUMS, MAX_QUEUE_NUMS)
                self.table[name] = tc.replace(read_queue_nums=min(tc.read_queue_nums, MAX_QUEUE_NUMS),
                                              write_queue_nums=min(tc.write_queue_nums, MAX_QUEUE_NUMS))
                clamped = True
        return clamped

    # --- lookups and changes --------------------------------------------------------------------------

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def __iter__(self) -> Iterator[TopicConfig]:
        return iter(list(self.table.values()))

    def __len__(self) -> int:
        return len(self.table)

    def update(self, config: TopicConfig) -> None:
        self.table[config.topic_name] = config
        self.changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self.changed()
        return True

    def update_order_flags(self, order_topics: Mapping[str, str]) -> bool:
        """updateOrderTopicConfig: the name servers' ORDER_TOPIC_CONFIG table (answered to a registration)
        decides which topics are ``order``: exactly those it names.  True when a flag changed (then the data
        version moves on and the table is persisted, once)."""
        changed = False
        for name, tc in list(self.table.items()):
            wanted = name in order_topics
            if tc.order != wanted:
                self.table[name] = tc.replace(order=wanted)
                log.info("order topic config from the name server: %s order=%s", name, wanted)
                changed = True
        if changed:
            self.changed()
        return changed

    def create_for_send(self, topic: str, default_topic: str, client_queue_nums: int,
                        topic_sys_flag: int = 0) -> TopicConfig | None:
        """createTopicInSendMessageMethod: a new topic modelled on *default_topic* if that one may be
        inherited (TBW102 only while autoCreateTopicEnable); None if it cannot be created."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            return None
        perm = template.perm
        if default_topic == AUTO_CREATE_TOPIC and not self.config.auto_create_topic_enable:
            perm = Perm.READ | Perm.WRITE
        if not Perm.inherited(perm):
            return None
        queues = max(0, min(client_queue_nums, template.write_queue_nums))
        tc = TopicConfig(topic, queues, queues, perm & ~Perm.INHERIT, template.topic_filter_type, topic_sys_flag)
        self.update(tc)
        return tc

    def create_retry_or_dlq(self, topic: str, queue_nums: int, perm: int = Perm.READ | Perm.WRITE,
                            topic_sys_flag: int = 0) -> TopicConfig:
        """createTopicInSendMessageBackMethod: create (or return) a ``%RETRY%`` / ``%DLQ%`` topic."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        queue_nums = min(queue_nums, MAX_QUEUE_NUMS)  # a group's retryQueueNums is any int
        tc = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.update(tc)
        return tc

    def registration_view(self, broker_permission: int,
                          names: Iterable[str] | None = None) -> dict[str, TopicConfig]:
        """The topics as registered (all, or those of *names* the table holds): when the broker lacks R or W,
        every topic gets the broker's perm."""
        table = self.table if names is None else {n: self.table[n] for n in names if n in self.table}
        if Perm.readable(broker_permission) and Perm.writeable(broker_permission):
            return dict(table)
        return {n: tc.replace(perm=broker_permission) for n, tc in table.items()}
