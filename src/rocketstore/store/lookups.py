"""The facade's look-ups: by offset, id, key and time, queue bounds and entries, commitlog read-outs.

:class:`StoreLookups` is a base class of the facade (message_store.py): each method answers from the
:class:`~rocketstore.store.reads.StoreReader`, the consume queue table or the commitlog the facade opened.
``get`` (the pull path) stays on the facade itself.

Must not import: message_store (the facade), background, dispatch, recovery; broker, remoting.
Thread-safety: every method may be called from any number of threads, alongside puts and dispatch.
"""

from __future__ import annotations

from rocketstore.message.arguments import int_argument
from rocketstore.message.record import StoredMessage
from rocketstore.store.results import QueryResult
from rocketstore.store.store_parts import StoreParts

__all__ = ["MAX_TIMESTAMP", "StoreLookups"]

MAX_TIMESTAMP = (1 << 63) - 1


class StoreLookups(StoreParts):
    """MessageStore's look-ups (read-only: they change nothing on disk or in memory)."""

    def message_at(self, commit_log_offset: int) -> StoredMessage | None:
        """The message whose record starts at *commit_log_offset*, or None; a damaged record there raises
        MessageDecodeError naming it (see StoreReader.message_at)."""
        return self._reader.message_at(commit_log_offset)

    def message_by_id(self, msg_id: str) -> StoredMessage | None:
        """Look up by offset message id (raises InvalidMessageIdError for malformed ids, MessageDecodeError
        for a damaged record)."""
        return self._reader.message_by_id(msg_id)

    def record_bytes(self, message: StoredMessage) -> bytes | None:
        """The commitlog record of *message* (read back from this store) as it is stored, byte for byte (what
        a broker's query and view answers carry: a topic or properties that are not UTF-8 stay as stored);
        None when retention deleted its segment meanwhile."""
        self._check_open()
        return self._commitlog.read(message.commit_log_offset, message.store_size)

    def query(self, topic: str, key: str, max_count: int = 64, begin_ms: int = 0,
              end_ms: int = MAX_TIMESTAMP) -> QueryResult:
        """Messages indexed under *key* (a KEYS token or UNIQ_KEY) stored in [begin_ms, end_ms].

        As in RocketMQ, matching is by the key's hash: a colliding key's messages come back too.  A damaged
        record among the hits raises MessageDecodeError naming it.  As in RocketMQ, the index keeps a store
        time in whole seconds after its file's first message: the window is compared with that time, up to
        a second before the message's ``store_timestamp`` (a window of a few milliseconds around a message's
        own store time may miss it; widen it by a second and filter the hits by ``store_timestamp``).
        """
        return self._reader.query(topic, key, max_count, begin_ms, end_ms)

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """RocketMQ's getOffsetInQueueByTime (nearest entry, ties to the earlier one)."""
        return self._reader.offset_by_time(topic, queue_id, timestamp_ms)

    def min_offset(self, topic: str, queue_id: int) -> int:
        return self._reader.min_offset(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self._reader.max_offset(topic, queue_id)

    def queue_entries(self, topic: str, queue_id: int, index: int, count: int) -> list[tuple[int, int, int]] | None:
        """Up to *count* raw consume queue entries (commitlog offset, size, tagsCode) from *index*, within
        the one consume queue file that holds it (RocketMQ's getIndexBuffer, as mqadmin queryCq shows them);
        [] when *index* is outside the queue, None when there is no such queue."""
        index = int_argument("index", index)
        count = int_argument("count", count)
        self._check_open()
        cq = self._queues.get(topic, queue_id)
        if cq is None:
            return None
        if index < cq.min_offset or count <= 0:
            return []
        found = cq.entries(index, count)
        if found is None:
            return []
        return [(int(o), int(s), int(t)) for o, s, t in found[0].tolist()]

    # The commitlog read-outs answer what the store held when it closed from then on (its unmapped files would
    # say 0, which a reader takes for an empty store): read first, then ask whether the store closed meanwhile,
    # since close records them before it sets _closed and unmaps the files after.

    @property
    def min_commit_log_offset(self) -> int:
        """Where the commitlog starts (after close: where it started then)."""
        value = self._commitlog.min_offset
        return self._offsets_at_close[0] if self._closed else value

    @property
    def max_commit_log_offset(self) -> int:
        """Where the commitlog ends (after close: where it ended then)."""
        value = self._commitlog.max_offset
        return self._offsets_at_close[1] if self._closed else value

    def in_disk(self, commit_log_offset: int) -> bool:
        """RocketMQ's checkInDiskByCommitOffset: whether the record at *commit_log_offset* lies further back
        from the commitlog's end than the hot share of memory (accessMessageInMemoryMaxRatio), where a read
        is taken to go to the disk."""
        return self.max_commit_log_offset - commit_log_offset > self._memory_for_hot_bytes

    @property
    def flushed_commit_log_offset(self) -> int:
        """How far the commitlog is known flushed (the rest is RocketMQ's remainHowManyDataToFlush; after
        close: as far as it was flushed then)."""
        value = self._commitlog.flushed_offset
        return self._offsets_at_close[2] if self._closed else value

    @property
    def append_lock_begin_ms(self) -> int:
        """When the put holding the commitlog's append lock took it (ms since the epoch); 0 when it is free
        (RocketMQ's pageCacheLockTimeMills is now minus this)."""
        return self._commitlog.lock_begin_ms

    def store_time(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp of the message at *queue_offset*, -1 if there is none."""
        return self._reader.store_time(topic, queue_id, queue_offset)

    def earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Store time of the oldest message (of one queue, or of the whole commitlog); -1 if none."""
        return self._reader.earliest_message_time(topic, queue_id)

    def topics(self) -> dict[str, list[int]]:
        """Every topic with a consume queue, and its queue ids (StoreClosedError once closed, as the other
        reads: the table then no longer says what the store holds)."""
        self._check_open()
        return self._queues.topics()
