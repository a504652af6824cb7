"""A store opened with ``background=False`` refuses puts once its dispatcher cannot write, as a store with
its threads does.

The put fast path reads one flag (``_refuse_writes``) that only the background threads refreshed when the
dispatcher hit an I/O error.  Without them, the caller's ``wait_dispatched`` (or ``flush``) runs the
dispatcher: it failed (here out of descriptors for a new queue's segment) and puts still answered PUT_OK,
piling up records no consumer could see, where the threaded store answers SERVICE_NOT_AVAILABLE until the
dispatcher can write again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, resource, sys
    from rocketstore.message.record import Message
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.message_store import MessageStore

    root, how = sys.argv[1], sys.argv[2]
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=6000,
                      preallocate_commit_log=False, warm_ahead_bytes=0,
                      max_hash_slot_num=100, max_index_num=400)
    store = MessageStore.open(root, cfg, background=False)
    assert store.put(Message(topic="T", queue_id=0, body=b"first")).status.name == "PUT_OK"
    assert store.wait_dispatched()  # the index file and the first queue's segment are open

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 1, hard))
    for q in range(1, 5):  # new queues: their segments want descriptors the process does not have
        assert store.put(Message(topic="T", queue_id=q, body=b"m%d" % q)).status.name == "PUT_OK"
    if how == "wait":
        print(store.wait_dispatched(timeout_s=0.05))
    else:
        store.flush()
        print(store.max_offset("T", 4) == 0)
    print(store.put(Message(topic="T", queue_id=0, body=b"while failing")).status.name)

    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(store.wait_dispatched())
    print(store.put(Message(topic="T", queue_id=0, body=b"after")).status.name)
    assert store.wait_dispatched()
    print(",".join(store.get("T", q, 0, 4).messages[-1].body.decode() for q in range(5)))
    store.close()
""")


def _run(tmp_path, how: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store"), how], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_wait_dispatched_failing_refuses_puts_until_dispatch_writes_again(tmp_path) -> None:
    assert _run(tmp_path, "wait") == ["False", "SERVICE_NOT_AVAILABLE", "True", "PUT_OK", "after,m1,m2,m3,m4"]


def test_flush_failing_to_dispatch_refuses_puts(tmp_path) -> None:
    assert _run(tmp_path, "flush") == ["True", "SERVICE_NOT_AVAILABLE", "True", "PUT_OK", "after,m1,m2,m3,m4"]
