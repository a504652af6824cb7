"""Where a push consumer keeps its consume offsets: on the broker (clustering) or in a local file
(broadcasting), as RocketMQ's RemoteBrokerOffsetStore / LocalFileOffsetStore.

Both keep an in-memory table (queue -> next offset to consume) that the consumer updates as messages are
handled; :meth:`persist` writes it out (every few seconds and at shutdown).  The offset written is always
the smallest offset still in flight (ProcessQueue semantics), so after a crash at most the messages after
the last persisted offset are delivered again.

The local file is what 4.9.3's LocalFileOffsetStore writes at the same path: fastjson's form of its
OffsetSerializeWrapper, ``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset, ...}}`` (object map
keys, not JSON), so a Java consumer with the same client id (``ip@DEFAULT`` for broadcasting) goes on from
it, and the other way round.  It is written atomically (temporary file, fsync, rename) so a crash leaves
the old or the new table, never half of one, and the previous table is kept as ``.bak``, as Java keeps it.
The plain-JSON form earlier versions wrote (``{"offsetTable": [{"topic", "brokerName", "queueId",
"offset"}, ...]}``) is read too.  An empty or unparsable file is read from its ``.bak`` when there is one;
without one it is an :class:`OffsetStoreError`, not a silent fresh start.  A missing file with a ``.bak``
(4.9.3 deletes the file before renaming the new one in: a crash between leaves only the ``.bak``) is read
from the ``.bak`` too.

Loop-bound; file reads and writes run in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from rocketstore.client.consumer import PullConsumer
from rocketstore.client.errors import ClientError
from rocketstore.client.route import MessageQueue
from rocketstore.files import path_lock, write_text_atomically
from rocketstore.remoting import fastjson
from rocketstore.remoting.fastjson import JsonBodyError

__all__ = ["LocalFileOffsetStore", "OffsetStore", "OffsetStoreError", "RemoteOffsetStore", "default_offset_dir"]

log = logging.getLogger(__name__)

#: readOffset's answer when nothing is known
NO_OFFSET = -1
#: the bound of a remote store's QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET: 4.9.3's
#: RemoteBrokerOffsetStore gives both a fixed 5 s, whatever the consumer's other settings
REMOTE_OFFSET_TIMEOUT_S = 5.0


class OffsetStoreError(ClientError):
    """A local offset file that cannot be read or written."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"offset file {path}: {reason}")


def default_offset_dir() -> Path:
    """``rocketmq.client.localOffsetStoreDir``'s default: ``~/.rocketmq_offsets``."""
    return Path(os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", Path.home() / ".rocketmq_offsets"))


class OffsetStore(Protocol):
    async def load(self) -> None: ...

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None: ...

    def read_memory(self, mq: MessageQueue) -> int: ...

    async def read_store(self, mq: MessageQueue) -> int: ...

    async def persist(self, mqs: Iterable[MessageQueue]) -> None: ...

    def remove(self, mq: MessageQueue) -> None: ...


class _MemoryTable:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        return self.table.get(mq, NO_OFFSET)

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)


class RemoteOffsetStore(_MemoryTable):
    """Offsets committed to the broker that holds each queue (UPDATE_CONSUMER_OFFSET)."""

    def __init__(self, consumer: PullConsumer) -> None:
        super().__init__()
        self.consumer = consumer
        #: queue -> (offset, broker address) of its last commit: an unchanged offset is not committed again
        #: to the same broker, but is to another (the master back after its slave took the commits)
        self._committed: dict[MessageQueue, tuple[int, str]] = {}

    async def load(self) -> None:
        """Nothing to load: offsets are read per queue when it is assigned."""

    async def read_store(self, mq: MessageQueue) -> int:
        """The broker's committed offset (NO_OFFSET when it has none); remembered in memory too."""
        offset = await self.consumer.committed_offset(mq, default=NO_OFFSET,
                                                      timeout_s=REMOTE_OFFSET_TIMEOUT_S)
        if offset >= 0:
            # not remembered as committed: for a new group the broker answers 0 without storing it
            self.table[mq] = offset
        return offset

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Commit the offsets of *mqs* that changed since their last commit, or whose commits go to another
        broker now: the master (a slave while it is down, as 4.9.3's updateConsumeOffsetToBroker picks).
        4.9.3 commits every offset at every persist; a master that comes back after its slave took the
        commits gets them so, not only once the offsets move on.  The first failure raises after the
        others were tried."""
        error: Exception | None = None
        for mq in list(mqs):
            offset = self.table.get(mq)
            if offset is None:
                continue
            try:
                addr = await self.consumer.routes.broker_addr(mq, master_only=False)
                if self._committed.get(mq) == (offset, addr):
                    continue
                await self.consumer.commit_offset(mq, offset, timeout_s=REMOTE_OFFSET_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - every queue gets its try; the first error is raised
                error = error or exc
                continue
            self._committed[mq] = (offset, addr)
        if error is not None:
            raise error

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        """As the memory table's; a position set outright (not *increase_only*: a seek, a reset, a lite
        consumer's or an orderly batch's commit) is committed at the next persist even if it is the value
        sent last, since another client of the group may have moved the broker's offset since."""
        super().update(mq, offset, increase_only=increase_only)
        if not increase_only:
            self._committed.pop(mq, None)

    def remove(self, mq: MessageQueue) -> None:
        super().remove(mq)
        self._committed.pop(mq, None)


def _object_key(key: object) -> dict[str, object]:
    """A MessageQueue key of 4.9.3's offset file (fastjson.loads makes an object key a tuple of pairs)."""
    if not isinstance(key, tuple):
        raise TypeError(f"offset table key {key!r} is not a message queue")
    return dict(key)


class LocalFileOffsetStore(_MemoryTable):
    """Offsets in ``<dir>/<client id>/<group>/offsets.json`` (broadcasting: each member has its own)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__()
        self.path = Path(path)
        self._write_lock = asyncio.Lock()  # one writer of the temporary file at a time

    async def load(self) -> None:
        self.table.update(await asyncio.to_thread(self._read_file))

    async def read_store(self, mq: MessageQueue) -> int:
        offset = (await asyncio.to_thread(self._read_file)).get(mq, NO_OFFSET)
        if offset >= 0:
            self.table[mq] = offset
        return offset

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Write the whole table (queues not in *mqs* keep their last offsets: a queue given up and taken
        back later resumes where it was)."""
        wanted = set(mqs)
        snapshot = {mq: off for mq, off in self.table.items() if mq in wanted}
        async with self._write_lock:
            await asyncio.to_thread(self._merge_and_write, snapshot)

    def _read_file(self, path: Path | None = None) -> dict[MessageQueue, int]:
        """The table of the offsets file (or *path*); one that is missing, empty or does not parse is read
        from its ``.bak`` when there is one, as 4.9.3 does (its client keeps the previous table there)."""
        path = path or self.path
        bak = self.path.with_name(self.path.name + ".bak")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            # 4.9.3 replaces the file by deleting it, then renaming its .tmp: a crash in between leaves only
            # the .bak (the previous table), which 4.9.3 reads then, as it does for an empty file
            if path == self.path and bak.is_file():
                log.warning("offset file %s is missing: reading %s", path, bak.name)
                return self._read_file(bak)
            return {}
        except OSError as exc:
            raise OffsetStoreError(str(path), str(exc)) from exc
        try:
            obj = fastjson.loads(data)
            raw = obj["offsetTable"]
            if isinstance(raw, dict):  # 4.9.3's file: fastjson's map keyed by MessageQueue objects
                entries = [{**_object_key(key), "offset": offset} for key, offset in raw.items()]
            else:
                entries = raw
            table = {}
            for entry in entries:
                mq = MessageQueue(str(entry["topic"]), str(entry["brokerName"]), int(entry["queueId"]))
                table[mq] = int(entry["offset"])
            return table
        except (ValueError, KeyError, TypeError, JsonBodyError) as exc:
            if path == self.path and bak.is_file():
                log.warning("offset file %s is not an offset table (%s): reading %s", path, exc, bak.name)
                return self._read_file(bak)
            raise OffsetStoreError(str(path), f"not an offset table: {exc}") from exc

    def _merge_and_write(self, snapshot: dict[MessageQueue, int]) -> None:
        # other stores of this file in the process: BROADCASTING consumers of one group in one process share
        # ``<ip>@DEFAULT``, so the file and its temporary file, and write from worker threads
        with path_lock(self.path):
            self._merge_and_write_locked(snapshot)

    def _merge_and_write_locked(self, snapshot: dict[MessageQueue, int]) -> None:
        table = self._read_file()
        table.update(snapshot)
        # fastjson's form of OffsetSerializeWrapper: the queues as object keys, which the Java client reads
        text = fastjson.dumps_object_keyed({}, "offsetTable", [
            ({"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}, off)
            for mq, off in sorted(table.items())]).decode()
        try:
            write_text_atomically(str(self.path), text)  # the previous table kept as .bak, as Java's string2File
        except OSError as exc:
            raise OffsetStoreError(str(self.path), str(exc)) from exc
