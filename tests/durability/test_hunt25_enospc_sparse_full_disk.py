"""A store whose segments have holes (as a Java broker writes them: it only sets their length), opened on a
full tmpfs: every touch of a hole through the mapping was SIGBUS, the process killed (recovery's read of the
last commitlog segment, the dispatcher's write to a consume queue or index file).  The open now allocates the
holes first and fails with ENOSPC; once space is freed the store opens with everything it held.  The store
runs in a child process, so that a SIGBUS fails the test instead of killing pytest."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig

from .hunt17_diskfull_fs import fill, small_fs, sparsify

_CHILD = textwrap.dedent("""
    import errno, sys
    from rocketstore import Message, MessageStore, StoreConfig
    cfg = StoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_commit_log=1 << 20,
                      mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=512, max_index_num=2048,
                      preallocate_commit_log=False, disk_max_used_space_ratio=95)
    try:
        store = MessageStore.open(sys.argv[1], cfg)
    except OSError as exc:
        sys.exit(28 if exc.errno == errno.ENOSPC else 3)
    for i in range(50):
        store.put(Message.create("T", b"w" * 100, keys=f"z{i}"))
    store.wait_dispatched(5)
    store.close()
""")


def _config(root: Path) -> StoreConfig:
    return StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20,
                       mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=512, max_index_num=2048,
                       preallocate_commit_log=False, disk_max_used_space_ratio=95)



@pytest.mark.parametrize("kind", ["tmpfs", "ext4"])
@pytest.mark.parametrize("sparse", ["commitlog", "consume queue", "index file"])
def test_a_store_of_sparse_segments_opened_on_a_full_disk_fails_with_enospc_not_sigbus(
        tmp_path: Path, sparse: str, kind: str) -> None:
    # (on ext4 a read of a hole is a page of zeros: the put or the dispatcher's write into one was the SIGBUS)
    with small_fs(tmp_path, "8m", kind) as mnt:
        root = mnt / "store"
        with MessageStore.open(root, _config(root)) as store:
            for i in range(10):
                assert store.put(Message.create("T", b"v" * 100, keys=f"k{i}")).ok
            assert store.wait_dispatched(10)
        sparsify({"commitlog": root / "commitlog" / "00000000000000000000",
                   "consume queue": root / "consumequeue" / "T" / "0" / "00000000000000000000",
                   "index file": next((root / "index").iterdir())}[sparse])
        scratch = fill(mnt)
        child = subprocess.run([sys.executable, "-c", _CHILD, str(root)], capture_output=True, check=False,
                               timeout=60)
        assert child.returncode != -signal.SIGBUS, "the store was killed by SIGBUS"
        assert child.returncode == 28, child.stderr.decode(errors="replace")[-2000:]
        scratch.unlink()
        with MessageStore.open(root, _config(root)) as store:
            assert store.put(Message.create("T", b"after", keys="after")).ok
            assert store.wait_dispatched(10)
            for q in range(11):
                assert store.get("T", 0, q, 1).status is GetMessageStatus.FOUND, q
            assert len(store.query("T", "k4").messages) == 1
