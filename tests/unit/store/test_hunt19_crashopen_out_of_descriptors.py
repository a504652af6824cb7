"""Opening a store when the process is out of file descriptors raises a typed store error naming the limit.

A store holds a descriptor for each commitlog, consume-queue and index file it has open: at thousands of
queues a process's RLIMIT_NOFILE runs out during the open, which used to surface as a bare
``OSError: [Errno 24] Too many open files`` from deep inside a segment's mmap.  It is now
:class:`~rocketstore.errors.TooManyOpenFilesError` (a StoreError, still an OSError with errno EMFILE) that
names the limit, and nothing the open got so far stays open: the lock is free for a retry."""

from __future__ import annotations

import subprocess
import sys
import textwrap

QUEUES = 40

SCRIPT = textwrap.dedent("""
    import errno, os, resource, sys
    from rocketstore.errors import StoreError, TooManyOpenFilesError
    from rocketstore.message.record import Message
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.message_store import MessageStore

    root = sys.argv[1]
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=6000,
                      preallocate_commit_log=False, warm_ahead_bytes=0,
                      max_hash_slot_num=100, max_index_num=400)
    store = MessageStore.open(root, cfg)
    for q in range(%d):
        assert store.put(Message(topic="T%%d" %% (q // 4), queue_id=q %% 4, body=b"m%%d" %% q)).status.name == "PUT_OK"
    assert store.wait_dispatched()
    store.close()

    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = open_fds()
    limit = before + 10  # room for a few of the queues' segments, not all of them
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        MessageStore.open(root, cfg, background=False)
    except StoreError as exc:
        caught = exc
    else:
        raise AssertionError("opened with too few descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(type(caught).__name__, isinstance(caught, OSError), caught.errno == errno.EMFILE,
          caught.limit == limit, ("RLIMIT_NOFILE %%d" %% limit) in str(caught), open_fds() - before)
    # nothing left open, the lock included: the same process opens the store once it has the descriptors
    store = MessageStore.open(root, cfg, background=False)
    print(store.get("T9", 3, 0, 1).messages[0].body.decode())
    store.close()
""" % QUEUES)


def test_open_out_of_descriptors_is_a_typed_error_naming_the_limit(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["TooManyOpenFilesError", "True", "True", "True", "True", "0", "m39"]
