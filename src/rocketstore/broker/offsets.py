"""Committed consumer offsets (RocketMQ's ConsumerOffsetManager): config/consumerOffset.json.

File: ``{"offsetTable":{"<topic>@<group>":{<queueId>:<offset>,...},...}}``.  A Java broker writes the queue
ids as bare integers (fastjson); we read that and write quoted keys, which is valid JSON and which fastjson
reads back.  Writes go through a temporary file, fsync and rename, so a crash never leaves half a file.
Offsets live in memory and are persisted every ``flushConsumerOffsetInterval`` (5 s) when changed and at
shutdown.

Thread-safety: commits come from the event loop; :meth:`persist` may run on another thread, so the table
is snapshotted under a lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from typing import Any

from rocketstore.broker.config_files import write_json_atomically
from rocketstore.config_json import TOPIC_GROUP_SEPARATOR, parse_offset_table, read_offset_table

__all__ = ["TOPIC_GROUP_SEPARATOR", "ConsumerOffsetTable"]


class ConsumerOffsetTable:
    def __init__(self, config_dir: str) -> None:
        self.path = os.path.join(config_dir, "consumerOffset.json")
        #: "topic@group" -> queue id -> next offset to consume
        self.table: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()
        self._persist_lock = threading.Lock()
        self._dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def load(self) -> None:
        loaded = read_offset_table(self.path)
        if loaded is None:
            return
        with self._lock:
            self.table = loaded

    def persist(self, force: bool = False) -> bool:
        """Write the file if anything changed since the last write (or *force*); True if written."""
        # snapshot and write in one piece: a periodic write on a worker thread and the one at shutdown must
        # not land older-snapshot-last
        with self._persist_lock:
            with self._lock:
                if not self._dirty and not force:
                    return False
                snapshot = {k: dict(sorted(v.items())) for k, v in self.table.items()}
                self._dirty = False
            try:
                write_json_atomically(self.path, {"offsetTable": snapshot})
            except OSError:
                with self._lock:
                    self._dirty = True
                raise
        return True

    def merge(self, table: dict[str, Any]) -> None:
        """A slave's sync: the master's GET_ALL_CONSUMER_OFFSET offsetTable replaces ours key by key
        (``topic@group``); keys only we have stay, as RocketMQ's putAll leaves them."""
        merged = parse_offset_table(table)
        with self._lock:
            for key, entries in merged.items():
                if self.table.get(key) != entries:
                    self.table[key] = entries
                    self._dirty = True

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = self.key(topic, group)
        with self._lock:
            queues = self.table.get(key)
            if queues is None:
                queues = self.table[key] = {}
            if queues.get(queue_id) != offset:
                queues[queue_id] = offset
                self._dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when there is none."""
        queues = self.table.get(self.key(topic, group))
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(self.key(topic, group), {}))

    def topics_of_group(self, group: str) -> list[str]:
        suffix = TOPIC_GROUP_SEPARATOR + group
        return sorted(k[: -len(suffix)] for k in self.table if k.endswith(suffix))

    def topics_by_group(self) -> dict[str, list[str]]:
        """group -> what :meth:`topics_of_group` answers for it, for every group, in one pass over the table
        (asking each of 5,000 groups in turn scanned 10,000 keys 5,000 times: seconds on the loop)."""
        found: dict[str, list[str]] = {}
        for key in list(self.table):
            start = 0
            while (at := key.find(TOPIC_GROUP_SEPARATOR, start)) >= 0:  # names have no "@"; a key may anyway
                found.setdefault(key[at + 1:], []).append(key[:at])
                start = at + 1
        for topics in found.values():
            topics.sort()
        return found

    def groups_of_topic(self, topic: str) -> list[str]:
        prefix = topic + TOPIC_GROUP_SEPARATOR
        return sorted(k[len(prefix):] for k in self.table if k.startswith(prefix))

    def clone(self, src_group: str, dest_group: str, topic: str) -> bool:
        """cloneOffset: *dest_group*'s offsets of *topic* become a copy of *src_group*'s (replacing whatever
        it had); False, and nothing changed, when the source has none there."""
        with self._lock:
            source = self.table.get(self.key(topic, src_group))
            if source is None:
                return False
            self.table[self.key(topic, dest_group)] = dict(source)
            self._dirty = True
        return True

    def min_over_groups(self, topic: str, excluded_groups: Collection[str],
                        min_offset: Callable[[int], int]) -> dict[int, int]:
        """queryMinOffsetInAllGroup: per queue of *topic*, the smallest offset any group but
        *excluded_groups* has committed, counting only offsets at or past the queue's *min_offset(queue_id)*
        (an offset of deleted messages holds nothing back).  4.9.3 also deletes the excluded groups' offsets
        from the table as it filters them out; here the table is only read."""
        prefix = topic + TOPIC_GROUP_SEPARATOR
        found: dict[int, int] = {}
        with self._lock:
            rows = [(k[len(prefix):], dict(v)) for k, v in self.table.items() if k.startswith(prefix)]
        for group, queues in rows:
            if group in excluded_groups:
                continue
            for queue_id, offset in queues.items():
                if offset >= min_offset(queue_id):
                    found[queue_id] = min(offset, found.get(queue_id, offset))
        return found

    def remove_group(self, group: str) -> None:
        suffix = TOPIC_GROUP_SEPARATOR + group
        with self._lock:
            for key in [k for k in self.table if k.endswith(suffix)]:
                del self.table[key]
                self._dirty = True

    def all_json(self) -> dict[str, dict[int, int]]:
        with self._lock:
            return {k: dict(v) for k, v in self.table.items()}
