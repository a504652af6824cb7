"""getOffsetInQueueByTime when the queue's first consume-queue file lies wholly below its min offset.

Vector from a differential run against 4.9.3's DefaultMessageStore: leading commitlog segments deleted, the
store reopened.  4.9.3 searches the first file that is left once its clean-up removed the stale one and
answers the queue's min offset for an early time; ours searched the stale file and answered 0 (below min).
"""

from __future__ import annotations

import os

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

_CFG = dict(mapped_file_size_commit_log=65536, mapped_file_size_consume_queue=400)  # 20 entries a file


def test_offset_by_time_skips_a_consume_queue_file_below_the_min(tmp_path):
    cfg = StoreConfig(**_CFG)
    with MessageStore.open(tmp_path, cfg) as st:
        for i in range(60):
            st.put(Message(topic="T", body=b"x" * 4000, properties={"TAGS": "a"}, queue_id=0,
                           store_timestamp=1_700_000_000_000 + i * 10))
        st.wait_dispatched()
    segments = sorted(os.listdir(tmp_path / "commitlog"))
    assert len(segments) >= 4
    for name in segments[:2]:  # retention's work, done while the store was down
        os.unlink(tmp_path / "commitlog" / name)
    with MessageStore.open(tmp_path, cfg, background=False) as st:
        low = st.min_offset("T", 0)
        assert low > 20  # the whole first consume-queue file points at deleted segments
        assert (tmp_path / "consumequeue" / "T" / "0" / f"{0:020d}").exists()
        first_time = st.store_time("T", 0, low)
        assert st.offset_by_time("T", 0, -1) == low
        assert st.offset_by_time("T", 0, 0) == low
        assert st.offset_by_time("T", 0, first_time) == low
        assert st.offset_by_time("T", 0, first_time + 20) == low + 2
