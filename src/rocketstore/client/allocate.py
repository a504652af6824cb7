"""How a clustering consumer group shares a topic's queues: the allocation strategies of RocketMQ 4.9.3.

Every member computes its own share from the same two sorted lists (all queues of the topic, all client
ids of the group, both in Java's order: :func:`java_string_key`), so the shares are disjoint and cover every queue without any coordination, as long as
the members see the same lists and use the same strategy.  A group mixing Java and Python members must
therefore get exactly Java's answers; tests/unit/client/test_hunt15_alloc_java_cases.py holds them to
cases computed by 4.9.3's own classes.

A strategy is any callable ``(client_id, queues, client_ids) -> list`` (:data:`AllocateStrategy`); the
group consumers take one as the ``allocate_strategy`` setting (default :func:`allocate_averagely`):

======================================  =================================================================
:func:`allocate_averagely`              AllocateMessageQueueAveragely: a contiguous run of
                                        ``len(queues) // len(clients)`` queues each, the first
                                        ``len(queues) % len(clients)`` members one more
:func:`allocate_averagely_by_circle`    AllocateMessageQueueAveragelyByCircle: queue *i* to member
                                        ``i % len(clients)``
:class:`AllocateConsistentHash`         AllocateMessageQueueConsistentHash: each member on a hash ring
                                        ``virtual_nodes`` times (default 10), a queue to the first virtual
                                        node at or after its hash (MD5 by default, :func:`md5_hash`); a
                                        member joining or leaving moves few queues
:class:`AllocateByConfig`               AllocateMessageQueueByConfig: a fixed list, whoever asks
:class:`AllocateByMachineRoom`          AllocateMessageQueueByMachineRoom: only queues of brokers named
                                        ``<room>@<name>`` whose room is listed, shared averagely
:class:`AllocateMachineRoomNearby`      AllocateMachineRoomNearby: another strategy applied per machine
                                        room (the rooms come from two resolver callables); queues of a
                                        room with no member are shared by all members
======================================  =================================================================

A client that is not (yet) in *client_ids* owns nothing, as in Java (which logs it as a bug and returns
an empty share); an empty *client_id* is a ValueError (AllocateByConfig asks nothing of its arguments).

Pure: no I/O.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = [
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "java_queue_key",
    "java_string_key",
    "md5_hash",
    "queue_key",
    "strategy_name",
]

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


#: ``(client_id, queues, client_ids) -> the queues client_id owns``; both lists sorted the same way by all
AllocateStrategy = Callable[[str, Sequence[Any], Sequence[str]], list[Any]]


def java_string_key(text: str) -> bytes:
    """A sort key ordering strings as Java's String.compareTo does (by UTF-16 code unit), which is how every
    Java member sorts the group's client ids: it differs from Python's order for characters past U+FFFF."""
    return text.encode("utf-16-be", "surrogatepass")


def java_queue_key(queue: Any) -> tuple[bytes, bytes, int]:
    """A sort key ordering queues as Java's MessageQueue.compareTo does (topic, then broker name, each by
    UTF-16 code unit, then queue id), which is how every Java member sorts a topic's queues before the
    allocation: Python's own order of the names differs for characters past U+FFFF."""
    return java_string_key(queue.topic), java_string_key(queue.broker_name), queue.queue_id


def _member_index(client_id: str, queues: Sequence[object], client_ids: Sequence[str]) -> int:
    """*client_id*'s position in *client_ids*; -1 when it owns nothing (no queue, not a member)."""
    if not client_id:
        raise ValueError("client_id is empty")
    if not queues or not client_ids or client_id not in client_ids:
        return -1
    return list(client_ids).index(client_id)


def allocate_averagely_by_circle(client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
    """AllocateMessageQueueAveragelyByCircle: the queues dealt out one by one, as cards round a table."""
    index = _member_index(client_id, queues, client_ids)
    return [] if index < 0 else list(queues[index::len(client_ids)])


def md5_hash(key: str) -> int:
    """The consistent hash ring's default hash: the first four bytes of the MD5 of *key*'s UTF-8 bytes, as an
    unsigned big-endian number (what 4.9.3's ring computes wherever Java's default charset is UTF-8)."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()[:4], "big")


def queue_key(queue: object) -> str:
    """What the consistent hash ring hashes for a queue: Java's MessageQueue.toString; ``str`` of anything
    else."""
    try:
        topic, broker_name, queue_id = queue.topic, queue.broker_name, queue.queue_id  # type: ignore[attr-defined]
    except AttributeError:
        return str(queue)
    return f"MessageQueue [topic={topic}, brokerName={broker_name}, queueId={queue_id}]"


class AllocateConsistentHash:
    """AllocateMessageQueueConsistentHash: every member at ``virtual_nodes`` points of a ring (the hashes of
    ``<client id>-<n>``), each queue to the member at the first point at or after the hash of its
    :func:`queue_key`, going round past the top.  A later point with the same hash as an earlier one
    replaces it, as Java's TreeMap does; 0 virtual nodes leave the ring empty and every share empty."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10, hash_fn: Callable[[str], int] | None = None) -> None:
        if virtual_nodes < 0:
            raise ValueError(f"illegal virtual_nodes: {virtual_nodes}")
        self.virtual_nodes = virtual_nodes
        self.hash_fn = hash_fn or md5_hash
        self._ring_of: tuple[tuple[str, ...], list[int], list[str]] | None = None  # the last ring built

    def _ring(self, client_ids: Sequence[str]) -> tuple[list[int], list[str]]:
        """The ring's points in ascending order and, at the same index, the member each belongs to."""
        members = tuple(client_ids)
        if self._ring_of is not None and self._ring_of[0] == members:
            return self._ring_of[1], self._ring_of[2]
        ring: dict[int, str] = {}
        points_of: dict[str, int] = {}
        for cid in members:
            first = points_of.get(cid, 0)  # a member listed twice gets further points, numbered on
            for i in range(self.virtual_nodes):
                point = self.hash_fn(f"{cid}-{first + i}")
                replaced = ring.get(point)
                if replaced is not None:
                    points_of[replaced] -= 1
                ring[point] = cid
                points_of[cid] = points_of.get(cid, 0) + 1
        points = sorted(ring)
        owners = [ring[p] for p in points]
        self._ring_of = (members, points, owners)
        return points, owners

    def __call__(self, client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
        if _member_index(client_id, queues, client_ids) < 0:
            return []
        points, owners = self._ring(client_ids)
        if not points:
            return []
        mine = []
        for q in queues:
            at = bisect.bisect_left(points, self.hash_fn(queue_key(q)))
            if owners[at if at < len(points) else 0] == client_id:
                mine.append(q)
        return mine


class AllocateByConfig:
    """AllocateMessageQueueByConfig: the same fixed queues for whoever asks, whatever the group (the group
    consumers keep those of the topic being rebalanced)."""

    name = "CONFIG"

    def __init__(self, queues: Iterable[Any]) -> None:
        self.queues = list(queues)

    def __call__(self, client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
        return list(self.queues)


def _java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split`` on a plain separator: trailing empty parts dropped (but "" is [""])."""
    if not text:
        return [""]
    parts = text.split(sep)
    while parts and not parts[-1]:
        parts.pop()
    return parts


class AllocateByMachineRoom:
    """AllocateMessageQueueByMachineRoom: only the queues of brokers named ``<room>@<name>`` with a room in
    *consumer_idcs*, shared like :func:`allocate_averagely` except that the members given one more queue
    get it from the end of the list."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        self.consumer_idcs = frozenset(consumer_idcs)

    def __call__(self, client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
        if not client_id.strip():
            raise ValueError("client_id is empty")
        index = _member_index(client_id, queues, client_ids)
        if index < 0:
            return []
        in_rooms = []
        for q in queues:
            parts = _java_split(q.broker_name, "@")  # type: ignore[attr-defined]
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                in_rooms.append(q)
        n = len(client_ids)
        each, rest = divmod(len(in_rooms), n)
        mine = in_rooms[index * each:(index + 1) * each]
        if index < rest:
            mine.append(in_rooms[each * n + index])
        return mine


class AllocateMachineRoomNearby:
    """AllocateMachineRoomNearby: *strategy* shares the queues of each machine room among the members in the
    same room; the queues of a room without members are shared by *strategy* among all members.
    *broker_room* names the room of a queue, *consumer_room* that of a client id; an empty room is a
    ValueError."""

    def __init__(self, strategy: AllocateStrategy, broker_room: Callable[[Any], str],
                 consumer_room: Callable[[str], str]) -> None:
        self.strategy = strategy
        self.broker_room = broker_room
        self.consumer_room = consumer_room
        self.name = f"MACHINE_ROOM_NEARBY-{strategy_name(strategy)}"

    def __call__(self, client_id: str, queues: Sequence[Q], client_ids: Sequence[str]) -> list[Q]:
        if _member_index(client_id, queues, client_ids) < 0:
            return []
        queues_in: dict[str, list[Q]] = {}
        for q in queues:
            room = self.broker_room(q)
            if not room:
                raise ValueError(f"no machine room for queue {q}")
            queues_in.setdefault(room, []).append(q)
        members_in: dict[str, list[str]] = {}
        for cid in client_ids:
            room = self.consumer_room(cid)
            if not room:
                raise ValueError(f"no machine room for client id {cid}")
            members_in.setdefault(room, []).append(cid)
        here = self.consumer_room(client_id)
        mine = []
        local = queues_in.pop(here, None)
        if local:
            mine.extend(self.strategy(client_id, local, members_in[here]))
        for room in sorted(queues_in):
            if room not in members_in:
                mine.extend(self.strategy(client_id, queues_in[room], client_ids))
        return mine


def strategy_name(strategy: AllocateStrategy) -> str:
    """The strategy's name as Java's getName gives it (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, ...)."""
    if strategy is allocate_averagely:
        return "AVG"
    if strategy is allocate_averagely_by_circle:
        return "AVG_BY_CIRCLE"
    name = getattr(strategy, "name", None)
    return name if isinstance(name, str) else getattr(strategy, "__name__", type(strategy).__name__)
