"""How a clustering consumer group shares a topic's queues: RocketMQ's AllocateMessageQueueAveragely.

Every member computes its own share from the same two sorted lists (all queues of the topic, all client
ids of the group), so the shares are disjoint and cover every queue without any coordination, as long as
the members see the same lists.  Each member gets a contiguous run of ``len(queues) // len(clients)``
queues, the first ``len(queues) % len(clients)`` members one more; with more members than queues the
last ones get nothing.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["allocate_averagely"]

Q = TypeVar("Q")


def allocate_averagely(client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
    """The queues *client_id* owns; *queues* and *client_ids* must already be sorted the same way by
    every member.  A client that is not (yet) in *client_ids* owns nothing, as in Java (which logs it as a
    bug and returns an empty share)."""
    if not client_id:
        raise ValueError("client_id is empty")
    if not queues or not client_ids or client_id not in client_ids:
        return []
    index = list(client_ids).index(client_id)
    n_queues, n_clients = len(queues), len(client_ids)
    mod = n_queues % n_clients
    if n_queues <= n_clients:
        average = 1
    elif mod > 0 and index < mod:
        average = n_queues // n_clients + 1
    else:
        average = n_queues // n_clients
    start = index * average if mod > 0 and index < mod else index * average + mod
    count = min(average, n_queues - start)
    return [queues[(start + i) % n_queues] for i in range(count)]
