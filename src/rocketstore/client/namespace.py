"""Namespaces (4.9.3's ClientConfig.namespace, NamespaceUtil): a client given a namespace ``NS`` names
topic ``T`` and group ``G`` ``NS%T`` and ``NS%G`` on the wire, and ``%RETRY%G`` / ``%DLQ%G`` become
``%RETRY%NS%G`` / ``%DLQ%NS%G``; system topics and groups (``CID_RMQ_SYS_*``) and names already in the
namespace are left as they are.  What the client hands back (messages, queues, send results) carries the
names without the namespace again.  An empty namespace wraps nothing.

No I/O; safe from any thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Protocol, TypeVar

from rocketstore.message.system_topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    is_system_topic,
)

__all__ = ["queue_with_namespace", "queue_without_namespace", "queues_with_namespace",
           "queues_without_namespace", "with_namespace", "without_namespace"]

#: NamespaceUtil.NAMESPACE_SEPARATOR
SEPARATOR = "%"
#: MixAll.CID_RMQ_SYS_PREFIX
_SYS_GROUP_PREFIX = "CID_RMQ_SYS_"

class _HasTopic(Protocol):
    @property
    def topic(self) -> str: ...


_Q = TypeVar("_Q", bound=_HasTopic)


def _is_system(resource: str) -> bool:
    return is_system_topic(resource) or resource.startswith(_SYS_GROUP_PREFIX)


def _split_prefix(resource: str) -> tuple[str, str]:
    """(the %RETRY% / %DLQ% prefix or "", the rest)."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if resource.startswith(prefix):
            return prefix, resource[len(prefix):]
    return "", resource


def with_namespace(namespace: str | None, resource: str) -> str:
    """*resource* in *namespace* (NamespaceUtil.wrapNamespace)."""
    if not namespace or not resource or _is_system(resource):
        return resource
    prefix, rest = _split_prefix(resource)
    if rest.startswith(namespace + SEPARATOR):  # isAlreadyWithNamespace
        return resource
    return f"{prefix}{namespace}{SEPARATOR}{rest}"


def without_namespace(namespace: str | None, resource: str) -> str:
    """*resource* without *namespace* when it is in it, else as it is
    (NamespaceUtil.withoutNamespace(resource, namespace))."""
    if not namespace or not resource:
        return resource
    prefix, rest = _split_prefix(resource)
    if not rest.startswith(namespace + SEPARATOR) or _is_system(resource):
        return resource
    return prefix + rest[len(namespace) + 1:]


def queue_with_namespace(namespace: str | None, item: _Q) -> _Q:
    """*item* (a MessageQueue, a message: any frozen dataclass with ``topic``) with its topic in *namespace*
    (ClientConfig.queueWithNamespace)."""
    return _with_topic(item, with_namespace(namespace, item.topic))


def queue_without_namespace(namespace: str | None, item: _Q) -> _Q:
    """*item* (a MessageQueue, a message) with its topic out of *namespace*, as the Java client hands it
    back (queueWithNamespace's reverse, resetNamespace / resetTopic)."""
    return _with_topic(item, without_namespace(namespace, item.topic))


def queues_with_namespace(namespace: str | None, items: Iterable[_Q]) -> list[_Q]:
    """:func:`queue_with_namespace` of each (ClientConfig.queuesWithNamespace)."""
    return [queue_with_namespace(namespace, item) for item in items]


def queues_without_namespace(namespace: str | None, items: Iterable[_Q]) -> list[_Q]:
    """:func:`queue_without_namespace` of each: the queues or messages the client hands back (the client
    keeps its own, named in the namespace, for send-back and offsets)."""
    return [queue_without_namespace(namespace, item) for item in items]


def _with_topic(item: _Q, topic: str) -> _Q:
    return item if topic == item.topic else dataclasses.replace(item, topic=topic)  # type: ignore[type-var]
