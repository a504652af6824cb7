"""A queue whose consume queue holds only pre-blank fill (its first entry at a non-zero queue offset, the real
entries cut by a recovery) must take the records re-dispatched to it after a kill -9.

Recovery used to take the fill's size (0x7FFFFFFF) for the queue's maxPhysicOffset, as RocketMQ does, and
then skipped every re-dispatched record below 2 GiB as "built already": an acknowledged message vanished
from its queue and the next put reused its queue offset.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.consume_queue import PRE_BLANK_SIZE, ConsumeQueue
from rocketstore.store.message_store import MessageStore

SRC_DIR = Path(__file__).resolve().parents[2] / "src"
SEGMENT = 4096
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 8,
                     max_hash_slot_num=4, max_index_num=8, file_reserved_time_h=0)

#: opens the store without background threads (so nothing dispatches), puts one message, says so, waits
_WRITER = textwrap.dedent("""
    import sys, time
    from rocketstore.message.record import Message
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.message_store import MessageStore
    cfg = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                      max_hash_slot_num=4, max_index_num=8, file_reserved_time_h=0)
    store = MessageStore.open(sys.argv[1], cfg, background=False)
    result = store.put(Message("T", b"acked"))
    print(result.status.name, result.queue_offset, store.max_offset("T", 0), flush=True)
    while True:
        time.sleep(1)
""")


def _store_with_fill_only_queue(root: Path) -> None:
    """T/0's consume queue: entries 24..27 pre-blank fill, nothing after, the commitlog's next record 28's."""
    with MessageStore.open(root, CONFIG) as store:
        for i in range(30):
            assert store.put(Message("T", b"%03d" % i + b"x" * 900)).ok
        assert store.wait_dispatched()
        # retention takes the commitlog up to the segment of records 28 and 29
        store.delete_expired_files(force=True, now_ms=2**62)
        assert store.min_commit_log_offset == 7 * SEGMENT
    # the consume queues are rebuilt from what is left: T/0 starts at queue offset 28, after fill for 24..27
    shutil.rmtree(root / "consumequeue")
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (28, 30)
    # a power loss took records 28 and 29 (the commitlog's last segment), not their consume-queue entries:
    # recovery cuts those entries and leaves the fill
    with open(root / "commitlog" / f"{7 * SEGMENT:020d}", "r+b") as f:
        f.write(bytes(SEGMENT))
    (root / "abort").touch()
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (28, 28)
    raw = (root / "consumequeue" / "T" / "0" / f"{24 * 20:020d}").read_bytes()
    assert raw[8:12] == PRE_BLANK_SIZE.to_bytes(4, "big") and raw[80:] == bytes(80)


def test_records_redispatched_to_a_fill_only_queue_after_kill_9_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store_with_fill_only_queue(root)
    env = dict(os.environ, PYTHONPATH=str(SRC_DIR))
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(root)], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line == ["PUT_OK", "28", "28"], line  # acknowledged, not dispatched yet
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        assert store.max_offset("T", 0) == 29
        assert [m.body for m in store.get("T", 0, 28, 4).messages] == [b"acked"]
        result = store.put(Message("T", b"next"))
        assert result.ok and result.queue_offset == 29
        assert store.wait_dispatched()
        assert [m.body for m in store.get("T", 0, 28, 4).messages] == [b"acked", b"next"]


def test_recovered_fill_is_no_max_physic_offset(tmp_path: Path) -> None:
    directory = str(tmp_path / "cq")
    cq = ConsumeQueue("T", 0, directory, 20 * 8, writable=True)
    assert cq.put(5000, 100, 0, 3)  # first entry at queue offset 3: fill for 0..2
    cq.truncate_dirty(5000)  # its record is gone: the fill stays
    assert cq.max_offset == 3
    cq.close()
    cq = ConsumeQueue("T", 0, directory, 20 * 8, writable=True)
    cq.load()
    cq.recover()
    try:
        assert cq.max_physic_offset == -1
        assert cq.put(5000, 100, 0, 3)
        assert cq.max_offset == 4
        assert cq.entry(3) == (5000, 100, 0)
    finally:
        cq.close()
