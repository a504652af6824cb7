"""Hypothesis: one consume queue written through each of its three write paths (``put`` entry by entry,
``put_run`` with dispatch facts, ``put_entries`` with columns) at once, against a plain model, with tiny
segments (4 entries) so files roll, fill and are deleted.

Rules append runs of entries (sometimes repeating the newest one, which every path must skip as built
already; a queue may start at a non-zero offset, behind pre-blank fill), cut the queue at a commitlog offset
(``truncate_dirty``, as recovery does), reopen it (``load`` + ``recover``, clean or not) and apply retention
(``delete_expired`` + ``correct_min_offset`` at a rising commitlog min, as the clean-up does).  After every
step the three queues hold the same bytes and offsets, and every live entry reads back as the model says.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from rocketstore.store.consume_queue import CQ_ENTRY_BYTES, ConsumeQueue

PER_FILE = 4
SEGMENT = PER_FILE * CQ_ENTRY_BYTES
PATHS = ("put", "run", "entries")
Entry = tuple[int, int, int]  # commitlog offset, size, tags code


class ConsumeQueueMachine(RuleBasedStateMachine):
    @initialize(start=st.sampled_from([0, 0, 1, 3, 4, 5, 9]))
    def setup(self, start: int) -> None:
        self.root = tempfile.mkdtemp(prefix="rocketstore-cq-model-")
        self.queues = {path: self._open(path) for path in PATHS}
        #: queue offset -> entry, for the live entries (at or past the min offset)
        self.model: dict[int, Entry] = {}
        self.next_offset = self.min_offset = start
        self.next_phy = 100
        #: the commitlog min of the last retention: it only rises, and no cut goes below it
        self.commit_log_min = 0

    def _open(self, path: str, *, recover: bool = False, clean: bool = False) -> ConsumeQueue:
        directory = os.path.join(self.root, path)
        os.makedirs(directory, exist_ok=True)
        queue = ConsumeQueue("T", 0, directory, SEGMENT, writable=True)
        if recover:
            queue.load()
            queue.recover(clean_exit=clean)
        return queue

    def teardown(self) -> None:
        for queue in getattr(self, "queues", {}).values():
            queue.close()
        if hasattr(self, "root"):
            shutil.rmtree(self.root, ignore_errors=True)

    @rule(n=st.integers(1, 11), gaps=st.lists(st.integers(0, 3), min_size=11, max_size=11),
          sizes=st.lists(st.integers(1, 50), min_size=11, max_size=11), repeat_newest=st.booleans())
    def append(self, n: int, gaps: list[int], sizes: list[int], repeat_newest: bool) -> None:
        facts: list[tuple[int, int, int, int]] = []  # commitlog offset, size, tags code, queue offset
        if repeat_newest and self.next_offset - 1 in self.model:  # built already: skipped by every path
            facts.append((*self.model[self.next_offset - 1], self.next_offset - 1))
        for i in range(n):
            phy = self.next_phy + gaps[i]
            facts.append((phy, sizes[i], phy * 7 - 3, self.next_offset + i))
            self.next_phy = phy + sizes[i]
        for path, queue in self.queues.items():
            if path == "put":
                gaps_at = [q for phy, size, tags, q in facts if not queue.put(phy, size, tags, q)]
                gap = gaps_at[0] if gaps_at else None
            elif path == "run":
                gap = queue.put_run([(phy, size, "T", 0, q, 0, 0, tags, None, None)
                                     for phy, size, tags, q in facts])
            else:
                columns = [np.asarray([f[j] for f in facts], dtype=np.int64) for j in range(4)]
                gap = queue.put_entries(*columns)
            assert gap is None, (path, gap)
        for phy, size, tags, q in facts:
            self.model[q] = (phy, size, tags)
        self.next_offset += n

    @rule(data=st.data())
    def truncate_dirty(self, data: st.DataObject) -> None:
        if not self.model:
            return
        entry = self.model[data.draw(st.sampled_from(sorted(self.model)))]
        cut = max(entry[0] - data.draw(st.integers(0, 1)), self.commit_log_min)
        for queue in self.queues.values():
            queue.truncate_dirty(cut)
        for q in [q for q, e in self.model.items() if e[0] >= cut]:
            del self.model[q]
        dropped = [q for q in range(self.min_offset, self.next_offset) if q not in self.model]
        if dropped:
            self.next_offset = dropped[0]
        self.next_phy = cut + 1  # the records from the cut on are dispatched again

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        for path in PATHS:
            self.queues[path].close()
            queue = self.queues[path] = self._open(path, recover=True, clean=clean)
            queue.correct_min_offset(self.commit_log_min)  # as the store's open does

    @rule(data=st.data())
    def retention(self, data: st.DataObject) -> None:
        if not self.model:
            return
        entry = self.model[data.draw(st.sampled_from(sorted(self.model)))]
        self.commit_log_min = max(entry[0] + data.draw(st.integers(0, 1)), self.commit_log_min)
        for queue in self.queues.values():
            queue.delete_expired(self.commit_log_min)
            queue.correct_min_offset(self.commit_log_min)
        live = [q for q, e in self.model.items() if e[0] >= self.commit_log_min]
        self.min_offset = min(live) if live else self.next_offset
        for q in [q for q in self.model if q < self.min_offset]:
            del self.model[q]

    @invariant()
    def the_paths_agree_with_each_other_and_the_model(self) -> None:
        if not hasattr(self, "queues"):
            return
        one = self.queues["put"]
        for path, queue in self.queues.items():
            assert queue.all_entries().tobytes() == one.all_entries().tobytes(), path
            assert (queue.min_offset, queue.max_offset, queue.max_physic_offset) == \
                (one.min_offset, one.max_offset, one.max_physic_offset), path
        if self.model:
            newest = self.model[max(self.model)]
            assert (one.min_offset, one.max_offset) == (self.min_offset, self.next_offset)
            assert one.max_physic_offset == newest[0] + newest[1]
            assert one.last_record_end() in (-1, newest[0] + newest[1])
        for q, entry in self.model.items():
            assert one.entry(q) == entry, q
            got = one.entries(q, 3)
            assert got is not None and tuple(int(x) for x in got[0][0]) == entry, q
        assert one.entry(self.next_offset) is None


ConsumeQueueMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                                 suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.filter_too_much])
test_the_consume_queues_write_paths_agree_with_a_model = ConsumeQueueMachine.TestCase
