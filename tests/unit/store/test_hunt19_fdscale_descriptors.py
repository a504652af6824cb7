"""File descriptors with many queues, and a store that runs out of them.

Python's mmap keeps a duplicate of the descriptor it maps; a consume-queue segment that also kept its own
took two descriptors a queue, so a store reached RLIMIT_NOFILE at half the queues RocketMQ (one a file)
holds.  And when descriptors run out, a put to a new queue must not break the store: the record is in the
commitlog, its queue is built once a descriptor is free again, existing queues are served meanwhile.

Each case runs in a subprocess (RLIMIT_NOFILE lowered there only)."""

from __future__ import annotations

_PRELUDE = """
    import resource, time
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=600,
                      preallocate_commit_log=False, warm_ahead_bytes=0,
                      max_hash_slot_num=100, max_index_num=400, flush_interval_consume_queue_ms=10)

    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    def lowest_free_fd():
        fd = os.open(os.devnull, os.O_RDONLY)
        os.close(fd)
        return fd  # a limit of this many makes the next open fail with EMFILE

    def wait_for(what, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        while not what():
            if time.monotonic() > deadline:
                raise AssertionError("condition not met")
            time.sleep(0.01)
"""


def test_a_consume_queue_segment_costs_one_descriptor(tmp_path, store_child) -> None:
    out = store_child("""
        queues = 60
        base = open_fds()
        store = MessageStore.open(root, cfg)
        for q in range(queues):
            put = store.put(Message(topic="T%d" % (q // 4), queue_id=q % 4, body=b"x"))
            assert put.status.name == "PUT_OK"
        assert store.wait_dispatched()
        store.flush()
        live = open_fds() - base
        store.close()
        store = MessageStore.open(root, cfg, background=False)
        reopened = open_fds() - base
        ok = all(store.get("T%d" % (q // 4), q % 4, 0, 1).messages[0].body == b"x" for q in range(queues))
        store.close()
        print(queues, live, reopened, ok, open_fds() - base)
    """, str(tmp_path / "store"), _PRELUDE)
    queues, live, reopened, ok, after_close = (int(out[0]), int(out[1]), int(out[2]), out[3], int(out[4]))
    assert ok == "True"
    # one per queue segment plus the commitlog, index, checkpoint, lock: far below two per queue
    assert live < queues + 20, live
    assert reopened < queues + 20, reopened
    assert after_close == 0


def test_running_out_of_descriptors_holds_new_queues_back_and_recovers(tmp_path, store_child) -> None:
    out = store_child("""
        store = MessageStore.open(root, cfg)
        for q in range(4):
            assert store.put(Message(topic="Old", queue_id=q, body=b"old")).status.name == "PUT_OK"
        assert store.wait_dispatched()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_fds() + 8, hard))
        statuses = []
        sent = 0
        # each new queue takes a descriptor for its segment; the put itself only needs the commitlog
        while sent < 100:
            status = store.put(Message(topic="New%d" % sent, body=b"new")).status.name
            statuses.append(status)
            if status != "PUT_OK":
                break
            sent += 1
            store.wait_dispatched(timeout_s=0.05)
        print(statuses[-1], sent < 100)
        # the queues that exist are still served
        print(store.get("Old", 2, 0, 1).messages[0].body.decode())
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        wait_for(store.wait_dispatched)
        wait_for(lambda: store.put(Message(topic="Old", queue_id=1, body=b"again")).status.name == "PUT_OK")
        print(all(store.get("New%d" % i, 0, 0, 1).messages[0].body == b"new" for i in range(sent)))
        print(store.fenced is None)
        store.close()
        store = MessageStore.open(root, cfg, background=False)
        print(all(store.get("New%d" % i, 0, 0, 1).messages[0].body == b"new" for i in range(sent)))
        store.close()
    """, str(tmp_path / "store"), _PRELUDE)
    assert out == ["SERVICE_NOT_AVAILABLE", "True", "old", "True", "True", "True"]


def test_flush_with_no_descriptor_left(tmp_path, store_child) -> None:
    """A consume-queue segment keeps no descriptor, so its flush opens one; with none left it falls back
    to msync rather than failing the flush (which fences the store)."""
    out = store_child("""
        store = MessageStore.open(root, cfg, background=False)
        assert store.put(Message(topic="Old", body=b"old")).status.name == "PUT_OK"
        assert store.wait_dispatched()
        store.flush()
        assert store.put(Message(topic="Old", body=b"more")).status.name == "PUT_OK"
        assert store.wait_dispatched()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free_fd(), hard))
        try:
            store.flush()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        print(store.fenced is None, store.get("Old", 0, 1, 1).messages[0].body.decode())
        store.close()
    """, str(tmp_path / "store"), _PRELUDE)
    assert out == ["True", "more"]


def test_background_flush_with_no_descriptor_left_does_not_fence(tmp_path, store_child) -> None:
    """The flush thread's thorough pass (consume queues, then the checkpoint) meets EMFILE: it writes what
    it can and tries the checkpoint again next time, instead of fencing the store until a reopen."""
    out = store_child("""
        import dataclasses, logging
        seen = []
        warned = lambda: any("cannot write the checkpoint" in m for m in seen)  # noqa: E731

        class Seen(logging.Handler):
            def emit(self, record):
                seen.append(record.getMessage())

        logging.getLogger("rocketstore").addHandler(Seen())
        fast = dataclasses.replace(cfg, flush_consume_queue_thorough_interval_ms=20,
                                   flush_commit_log_thorough_interval_ms=20)
        store = MessageStore.open(root, fast)
        assert store.put(Message(topic="Old", body=b"old")).status.name == "PUT_OK"
        assert store.wait_dispatched()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free_fd(), hard))
        try:
            wait_for(lambda: store.fenced is not None or warned())
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        print(store.fenced is None, store.put(Message(topic="Old", body=b"more")).status.name)
        store.close()
    """, str(tmp_path / "store"), _PRELUDE)
    assert out == ["True", "PUT_OK"]
