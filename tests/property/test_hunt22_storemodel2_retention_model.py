"""Hypothesis: the store against an in-memory model, for what test_store_model.py leaves out: retention
(expired commitlog segments deleted, then the consume queues and index following), topic deletion
(clean_unused_topics, as DELETE_TOPIC uses it) with puts to the topic afterwards, delayed messages read back
from SCHEDULE_TOPIC_XXXX, the store's own verify on the live store, and crashes whose copy has a torn or
zeroed last record.

Retention is driven without sleeps: the store is closed, the segments to expire get an mtime 100 h in the
past, and a reopened store (whose cleaner first sees them old) runs a forced pass.

Found and left (see the hunt's report): verify_store reports RECORD_NOT_IN_CQ for the records of a queue
that clean_unused_topics dropped, a false positive on a healthy store after DELETE_TOPIC.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, decode_record, header_layout
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus
from rocketstore.store.verify import verify_store

SEGMENT = 4096
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 8,
                     max_hash_slot_num=4, max_index_num=8, preallocate_commit_log=False,
                     message_index_safe=True, file_reserved_time_h=72, delete_when="99")
TOPICS = ("TopicA", "TopicB")
QUEUES = tuple(itertools.product(TOPICS, (0, 1)))
DELAY_LEVELS = (1, 2)
DELAY_QUEUES = tuple((SCHEDULE_TOPIC, level - 1) for level in DELAY_LEVELS)
KEYS = ("k1", "k2", "k3")
BODIES = st.builds(lambda head, pad: head + bytes([len(head) + 1]) * pad, st.binary(max_size=20),
                   st.integers(0, 900))
HEADER_BYTES = header_layout(False, False).size
OLD_S = 100 * 3600


@dataclass(frozen=True)
class Expected:
    topic: str  # the topic the record is stored under (SCHEDULE_TOPIC_XXXX for a delayed message)
    queue_id: int
    queue_offset: int
    body: bytes
    key: str
    commit_log_offset: int
    store_size: int

    @property
    def end(self) -> int:
        return self.commit_log_offset + self.store_size


class RetentionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = tempfile.mkdtemp(prefix="rocketstore-hunt22-")
        self.generation = 0
        self.path = os.path.join(self.base, "gen0")
        self.store: MessageStore = MessageStore.open(self.path, CONFIG)
        # per queue: its entries from queue offset 0; min is the first one still readable
        self.queues: dict[tuple[str, int], list[Expected]] = {q: [] for q in QUEUES + DELAY_QUEUES}
        self.mins: dict[tuple[str, int], int] = {q: 0 for q in self.queues}
        self.live: list[Expected] = []  # records still in the commitlog
        self.deleted_topics: set[str] = set()
        # a dropped queue's records are still in the commitlog: a restart re-dispatches those past every
        # other queue's last entry and brings the queue back (as 4.9.3's reputFromOffset does), and verify
        # reports them as RECORD_NOT_IN_CQ (see the module's docstring); the model covers neither, so rules
        # that restart or verify stop once a delete_topic has dropped records
        self.dropped_records = False
        self.counter = itertools.count()

    def teardown(self) -> None:
        try:
            self.store.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------------------------------

    def _put(self, message: Message, queue: tuple[str, int]) -> None:
        result = self.store.put(message)
        assert result.ok, result
        assert result.queue_offset == len(self.queues[queue])
        e = Expected(queue[0], queue[1], result.queue_offset, message.body, message.keys or "",
                     result.commit_log_offset, result.wrote_bytes)
        self.queues[queue].append(e)
        self.live.append(e)

    def _cl_min(self) -> int:
        return self.store.min_commit_log_offset

    def _forget_below(self, cl_min: int) -> None:
        self.live = [e for e in self.live if e.commit_log_offset >= cl_min]
        for q, entries in self.queues.items():
            self.mins[q] = next((i for i, e in enumerate(entries) if e.commit_log_offset >= cl_min), len(entries))

    def _reset_queue(self, queue: tuple[str, int]) -> None:
        self.queues[queue] = []
        self.mins[queue] = 0

    # --- writes ----------------------------------------------------------------------------------------------

    @rule(queue=st.sampled_from(QUEUES), body=BODIES, key=st.sampled_from(KEYS), count=st.integers(1, 3))
    def put(self, queue: tuple[str, int], body: bytes, key: str, count: int) -> None:
        for _ in range(count):
            uniq = f"U{next(self.counter):06d}"
            self._put(Message.create(queue[0], body, keys=key, uniq_key=uniq, queue_id=queue[1]), queue)
        self.deleted_topics.discard(queue[0])

    @rule(topic=st.sampled_from(TOPICS), level=st.sampled_from(DELAY_LEVELS), body=BODIES)
    def put_delayed(self, topic: str, level: int, body: bytes) -> None:
        uniq = f"D{next(self.counter):06d}"
        message = Message.create(topic, body, keys="kd", uniq_key=uniq, queue_id=1,
                                 properties={PropertyName.DELAY: str(level)})
        self._put(message, (SCHEDULE_TOPIC, level - 1))

    # --- retention and topic deletion -------------------------------------------------------------------------

    @precondition(lambda self: not self.dropped_records)
    @rule(expire=st.integers(1, 4))
    def retention(self, expire: int) -> None:
        """Expire the oldest *expire* segments (never the newest), as retention finds them 100 h old."""
        self.store.close()
        segments = sorted(os.listdir(os.path.join(self.path, "commitlog")))
        past = time.time() - OLD_S
        for name in segments[:-1][:expire]:
            os.utime(os.path.join(self.path, "commitlog", name), (past, past))
        self.store = MessageStore.open(self.path, CONFIG)
        assert self.store.wait_dispatched()
        before = self._cl_min()
        report = self.store.delete_expired_files(force=True)
        assert report.commit_log_files_deleted == min(expire, max(0, len(segments) - 1))
        cl_min = self._cl_min()
        assert cl_min >= before
        if segments[:-1]:
            assert cl_min == int(segments[min(expire, len(segments) - 1)])
        self._forget_below(cl_min)

    @rule()
    def clean_expired_consume_queues(self) -> None:
        cl_min = self._cl_min()
        expected = sorted(q for q, entries in self.queues.items()
                          if entries and q[0] != SCHEDULE_TOPIC and entries[-1].end < cl_min)
        assert self.store.clean_expired_consume_queues() == expected
        for q in expected:
            self._reset_queue(q)

    @rule(topic=st.sampled_from(TOPICS))
    def delete_topic(self, topic: str) -> None:
        live_topics = set(TOPICS) - self.deleted_topics - {topic}
        dropped = self.store.clean_unused_topics(live_topics)
        # every queue of a topic no longer live goes (an empty one only if the store has its files)
        assert all(q in QUEUES and q[0] not in live_topics for q in dropped)
        assert {q for q in QUEUES if q[0] not in live_topics and self.queues[q]} <= set(dropped)
        for q in dropped:
            self.dropped_records |= bool(self.queues[q])
            self._reset_queue(q)
        self.deleted_topics.add(topic)

    # --- reads -----------------------------------------------------------------------------------------------

    @rule(queue=st.sampled_from(QUEUES + DELAY_QUEUES), data=st.data())
    def get_below_and_at_min(self, queue: tuple[str, int], data: st.DataObject) -> None:
        assert self.store.wait_dispatched()
        entries, low = self.queues[queue], self.mins[queue]
        n = len(entries)
        assert (self.store.min_offset(*queue), self.store.max_offset(*queue)) == (low, n)
        if n == 0:
            return
        offset = data.draw(st.integers(0, n), label="offset")
        got = self.store.get(*queue, offset, 4)
        if offset < low:
            assert (got.status, got.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, low)
            assert self.store.store_time(*queue, offset) == -1
        elif offset == n:
            assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
        else:
            assert got.status is GetMessageStatus.FOUND, got
            assert got.queue_offsets[0] == offset
            stored_ms = self.store.store_time(*queue, offset)
            assert stored_ms > 0
            found = self.store.offset_by_time(*queue, stored_ms)
            assert low <= found < n, (found, low, n)

    @rule(topic=st.sampled_from(TOPICS + (SCHEDULE_TOPIC,)), key=st.sampled_from(KEYS + ("kd",)))
    def query_by_key(self, topic: str, key: str) -> None:
        assert self.store.wait_dispatched()
        expected = {e.commit_log_offset for e in self.live if e.topic == topic and e.key == key}
        hits = {m.commit_log_offset for m in self.store.query(topic, key, 64).messages if m.keys == key}
        if len(expected) <= 32:
            assert hits == expected
        else:
            assert hits <= expected
        assert all(h >= self._cl_min() for h in hits)

    @precondition(lambda self: not self.dropped_records)
    @rule()
    def verify(self) -> None:
        assert self.store.wait_dispatched()
        report = verify_store(self.store)
        assert report.ok, [str(p) for p in report.problems]

    # --- lifecycle -------------------------------------------------------------------------------------------

    @precondition(lambda self: not self.dropped_records)
    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = MessageStore.open(self.path, CONFIG)
        assert not self.store.recovery.abnormal

    @precondition(lambda self: self.live and not self.dropped_records)
    @rule(how=st.sampled_from(("clean", "torn", "zeroed")), data=st.data())
    def crash(self, how: str, data: st.DataObject) -> None:
        self.store.flush()
        self.generation += 1
        copy = os.path.join(self.base, f"gen{self.generation}")
        shutil.copytree(self.path, copy)
        self.store.close()
        shutil.rmtree(self.path)
        self.path = copy
        lost: list[Expected] = []
        if how != "clean":
            last = max(self.live, key=lambda e: e.commit_log_offset)
            if how == "torn":  # cut inside the header or the body, so recovery's checks see it
                cut = data.draw(st.integers(0, HEADER_BYTES + len(last.body) - 1), label="cut")
            else:
                cut = 0
            self._zero_from(last.commit_log_offset + cut)
            if self._cut_is_visible(last, cut):
                lost = [last]
        self.store = MessageStore.open(copy, CONFIG)
        assert self.store.recovery.abnormal
        assert self.store.wait_dispatched()
        for e in lost:
            self.live.remove(e)
            entries = self.queues[(e.topic, e.queue_id)]
            if entries and entries[-1] == e:  # (its queue may have been dropped since)
                entries.pop()
        self._forget_below(self._cl_min())

    def _cut_is_visible(self, e: Expected, cut: int) -> bool:
        # zeroing body bytes that already were zero changes nothing recovery can see
        if cut < HEADER_BYTES:
            return True
        return any(e.body[cut - HEADER_BYTES:])

    def _zero_from(self, offset: int) -> None:
        name = os.path.join(self.path, "commitlog", f"{offset - offset % SEGMENT:020d}")
        with open(name, "r+b") as f:
            f.seek(offset % SEGMENT)
            f.write(bytes(SEGMENT - offset % SEGMENT))

    # --- invariants ------------------------------------------------------------------------------------------

    @invariant()
    def every_queue_reads_back_the_model(self) -> None:
        assert self.store.wait_dispatched()
        for queue, entries in self.queues.items():
            low, n = self.mins[queue], len(entries)
            assert (self.store.min_offset(*queue), self.store.max_offset(*queue)) == (low, n), queue
            offset = low
            while offset < n:
                got = self.store.get(*queue, offset, 32)
                assert got.status is GetMessageStatus.FOUND, (queue, offset, got)
                for record, queue_offset in zip(got.records, got.queue_offsets):
                    m = decode_record(record, check_crc=True)
                    e = entries[queue_offset]
                    assert (m.topic, m.queue_id, m.body, m.commit_log_offset) == \
                        (e.topic, e.queue_id, e.body, e.commit_log_offset)
                    if queue[0] == SCHEDULE_TOPIC:
                        assert m.properties[PropertyName.REAL_TOPIC] in TOPICS
                        assert m.properties[PropertyName.REAL_QID] == "1"
                offset = got.next_begin_offset
            assert offset == max(low, n)


RetentionMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                              suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.filter_too_much])
test_store_matches_the_model_through_retention_and_topic_deletion = RetentionMachine.TestCase
