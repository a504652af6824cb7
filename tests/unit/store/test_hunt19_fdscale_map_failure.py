"""A segment whose mapping fails (ENOMEM: vm.max_map_count or the address space used up) must not stay
behind under its real name: the put answers CREATE_MAPEDFILE_FAILED (a consume queue's dispatch waits and
retries), and once memory is back the same segment is created and the store goes on.

Each case runs in a subprocess whose address space is capped with RLIMIT_AS just above what it uses, so
the cap cannot touch the test process; a segment larger than the headroom then fails at mmap, after its
file was allocated and renamed into place."""

from __future__ import annotations

_PRELUDE = """
    import resource

    SOFT, HARD = resource.getrlimit(resource.RLIMIT_AS)

    def cap(headroom_bytes):
        resource.setrlimit(resource.RLIMIT_AS, (proc_status_bytes("VmSize") + headroom_bytes, HARD))

    def uncap():
        resource.setrlimit(resource.RLIMIT_AS, (SOFT, HARD))
"""


def test_commitlog_segment_created_after_a_failed_mapping(tmp_path, store_child) -> None:
    out = store_child("""
        seg = 32 << 20
        cfg = StoreConfig(mapped_file_size_commit_log=seg, mapped_file_size_consume_queue=6000,
                          preallocate_commit_log=False, warm_ahead_bytes=0,
                          max_hash_slot_num=100, max_index_num=400)
        store = MessageStore.open(root, cfg, background=False)
        body = b"x" * (1 << 20)
        while store.max_commit_log_offset + len(body) + 4096 < seg:
            assert store.put(Message(topic="T", body=body)).status.name == "PUT_OK"
        cap(8 << 20)
        refused = store.put(Message(topic="T", body=body)).status.name
        uncap()
        after = store.put(Message(topic="T", body=b"after"))
        store.wait_dispatched()
        got = store.get("T", 0, after.queue_offset, 1)
        print(refused, after.status.name, got.messages[0].body.decode(),
              len(os.listdir(os.path.join(root, "commitlog"))))
        store.close()
        store = MessageStore.open(root, cfg, background=False)
        print(store.get("T", 0, after.queue_offset, 1).messages[0].body.decode())
        store.close()
    """, str(tmp_path / "store"), _PRELUDE)
    assert out == ["CREATE_MAPEDFILE_FAILED", "PUT_OK", "after", "2", "after"]


def test_consume_queue_created_after_a_failed_mapping(tmp_path, store_child) -> None:
    out = store_child("""
        cq_bytes = 20 * 1_600_000  # 32 MB: more than the headroom below
        cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=cq_bytes,
                          preallocate_commit_log=False, warm_ahead_bytes=0,
                          max_hash_slot_num=100, max_index_num=400)
        store = MessageStore.open(root, cfg, background=False)
        assert store.put(Message(topic="Old", body=b"old")).status.name == "PUT_OK"
        store.wait_dispatched()
        cap(8 << 20)
        # the commitlog takes the record; its new queue's file cannot be mapped, so dispatch stops there
        first = store.put(Message(topic="New", queue_id=3, body=b"new")).status.name
        caught_up = store.wait_dispatched(timeout_s=0)
        served = store.get("Old", 0, 0, 1).messages[0].body.decode()
        uncap()
        caught_up_after = store.wait_dispatched()
        got = store.get("New", 3, 0, 1).messages[0].body.decode()
        later = store.put(Message(topic="Old", body=b"more")).status.name
        print(first, caught_up, served, caught_up_after, got, later)
        store.close()
        store = MessageStore.open(root, cfg, background=False)
        print(store.get("New", 3, 0, 1).messages[0].body.decode())
        store.close()
    """, str(tmp_path / "store"), _PRELUDE)
    assert out == ["PUT_OK", "False", "old", "True", "new", "PUT_OK", "new"]
