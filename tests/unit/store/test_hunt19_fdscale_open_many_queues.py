"""Opening a store after a clean shutdown reads each consume queue only up to its last entry.

Recovery used to read every queue's whole last segment (6 MB by default) and then zero-check the rest of
it, which faulted every page in: a store of 500 queues holding one message each took 3 GB of memory and
seconds to open, 20,000 queues would take 120 GB.  The memory a fresh process maps in while it opens is
the measure here (RssFile from /proc/self/status), so the test does not depend on timing."""

from __future__ import annotations

QUEUES = 12
CQ_SEGMENT_BYTES = 300_000 * 20  # RocketMQ's default: 6 MB a queue


#: the store of these cases
_PRELUDE = """
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=%d,
                      preallocate_commit_log=False, warm_ahead_bytes=0,
                      max_hash_slot_num=100, max_index_num=400)
""" % CQ_SEGMENT_BYTES


def test_clean_open_maps_in_only_the_written_entries(tmp_path, store_child) -> None:
    root = str(tmp_path / "store")
    store_child("""
        store = MessageStore.open(root, cfg)
        for q in range(%d):
            put = store.put(Message(topic="T%%d" %% (q // 4), queue_id=q %% 4, body=b"m%%d" %% q))
            assert put.status.name == "PUT_OK"
        assert store.wait_dispatched()
        store.close()
    """ % QUEUES, root, _PRELUDE)
    out = store_child("""
        before = proc_status_bytes("RssFile")
        store = MessageStore.open(root, cfg, background=False)
        grew = proc_status_bytes("RssFile") - before
        bodies = [store.get("T%%d" %% (q // 4), q %% 4, 0, 1).messages[0].body.decode() for q in range(%d)]
        print(grew, ",".join(bodies), store.max_offset("T0", 0))
        store.close()
    """ % QUEUES, root, _PRELUDE)
    grew, bodies, max_offset = int(out[0]), out[1], out[2]
    assert bodies == ",".join(f"m{q}" for q in range(QUEUES))
    assert max_offset == "1"
    # one segment read whole would be 6 MB; all of them QUEUES x 6 MB
    assert grew < CQ_SEGMENT_BYTES, grew


def test_open_after_a_crash_still_zeroes_a_queue_tail(tmp_path, store_child) -> None:
    """After an abnormal exit the tail past a queue's valid prefix is checked and zeroed: a stale entry
    left after an empty slot must not come back once the queue grows up to it and a later clean open
    trusts the tail."""
    root = str(tmp_path / "store")
    out = store_child("""
        import struct
        store = MessageStore.open(root, cfg)
        first = store.put(Message(topic="T", body=b"one"))
        assert store.wait_dispatched()
        store.close()
        path = os.path.join(root, "consumequeue", "T", "0", "%020d" % 0)
        with open(path, "r+b") as f:  # a stale entry two slots past the end, as a torn earlier life left it
            f.seek(2 * 20)
            f.write(struct.pack(">qiq", first.commit_log_offset, 100, 0))
        open(os.path.join(root, "abort"), "wb").close()  # as if the store had crashed
        store = MessageStore.open(root, cfg, background=False)
        print(store.max_offset("T", 0))
        second = store.put(Message(topic="T", body=b"two"))
        assert store.wait_dispatched()
        store.close()  # a clean exit: this open trusts the tail to be zero
        store = MessageStore.open(root, cfg, background=False)
        print(store.max_offset("T", 0), store.get("T", 0, 1, 4).messages[0].body.decode())
        store.close()
    """, root, _PRELUDE)
    assert out == ["1", "2", "two"]
