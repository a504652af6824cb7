"""Where a push consumer keeps its consume offsets: on the broker (clustering) or in a local file
(broadcasting), as RocketMQ's RemoteBrokerOffsetStore / LocalFileOffsetStore.

Both keep an in-memory table (queue -> next offset to consume) that the consumer updates as messages are
handled; :meth:`persist` writes it out (every few seconds and at shutdown).  The offset written is always
the smallest offset still in flight (ProcessQueue semantics), so after a crash at most the messages after
the last persisted offset are delivered again.

The local file is JSON, ``{"offsetTable": [{"topic", "brokerName", "queueId", "offset"}, ...]}``, written
atomically (temporary file, fsync, rename) so a crash leaves the old or the new table, never half of one.
Java writes fastjson with object map keys, which is not JSON; the file is private to this client, so the
plain form wins.

Loop-bound; file reads and writes run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from rocketstore.client.consumer import PullConsumer
from rocketstore.client.errors import ClientError
from rocketstore.client.route import MessageQueue

__all__ = ["LocalFileOffsetStore", "OffsetStore", "OffsetStoreError", "RemoteOffsetStore", "default_offset_dir"]

#: readOffset's answer when nothing is known
NO_OFFSET = -1


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
        self._committed: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        """Nothing to load: offsets are read per queue when it is assigned."""

    async def read_store(self, mq: MessageQueue) -> int:
        """The broker's committed offset (NO_OFFSET when it has none); remembered in memory too."""
        offset = await self.consumer.committed_offset(mq, default=NO_OFFSET)
        if offset >= 0:
            # not remembered as committed: for a new group the broker answers 0 without storing it
            self.table[mq] = offset
        return offset

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Commit the offsets of *mqs* that changed since their last commit; the first failure raises
        after the others were tried."""
        error: Exception | None = None
        for mq in list(mqs):
            offset = self.table.get(mq)
            if offset is None or self._committed.get(mq) == offset:
                continue
            try:
                await self.consumer.commit_offset(mq, offset)
            except Exception as exc:  # noqa: BLE001 - every queue gets its try; the first error is raised
                error = error or exc
                continue
            self._committed[mq] = offset
        if error is not None:
            raise error

    def remove(self, mq: MessageQueue) -> None:
        super().remove(mq)
        self._committed.pop(mq, None)


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

    def _read_file(self) -> dict[MessageQueue, int]:
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise OffsetStoreError(str(self.path), str(exc)) from exc
        try:
            obj = json.loads(text)
            table = {}
            for entry in obj["offsetTable"]:
                mq = MessageQueue(str(entry["topic"]), str(entry["brokerName"]), int(entry["queueId"]))
                table[mq] = int(entry["offset"])
            return table
        except (ValueError, KeyError, TypeError) as exc:
            raise OffsetStoreError(str(self.path), f"not an offset table: {exc}") from exc

    def _merge_and_write(self, snapshot: dict[MessageQueue, int]) -> None:
        table = self._read_file()
        table.update(snapshot)
        entries = [{"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off}
                   for mq, off in sorted(table.items())]
        data = json.dumps({"offsetTable": entries}, indent=1).encode()
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise OffsetStoreError(str(self.path), str(exc)) from exc
