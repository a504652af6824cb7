"""A writable open of a store whose older index files are sparse (a Java broker's are: it only sets their
length, and a full file's untouched hash slots stay holes), on a full tmpfs: the open gives only the newest
file its blocks, and a key query reading a slot in a hole of an older file was SIGBUS (on tmpfs a read
fault of a hole allocates), which kills a broker.  A full older index file is never written again, so its
holes are now mapped as anonymous zeros.  The store runs in a child process, so that a SIGBUS fails the
test instead of killing pytest."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig

from .hunt17_diskfull_fs import fill, small_fs, sparse_test_config, sparsify

_QUERY = textwrap.dedent("""
    import sys
    from rocketstore import MessageStore, StoreConfig
    cfg = StoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_commit_log=1 << 20,
                      mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=20000, max_index_num=21)
    with MessageStore.open(sys.argv[1], cfg) as store:
        found = sum(len(store.query("T", f"k{i}").messages) for i in range(60))
        absent = sum(len(store.query("T", f"absent{i}").messages) for i in range(500))
        print(found, absent)
""")


def _config(root: Path) -> StoreConfig:
    return sparse_test_config(root, max_hash_slot_num=20000, max_index_num=21)


def test_key_queries_on_the_older_sparse_index_files_of_a_store_on_a_full_tmpfs(tmp_path: Path) -> None:
    with small_fs(tmp_path, "8m") as mnt:
        root = mnt / "store"
        with MessageStore.open(root, _config(root)) as store:
            for i in range(60):  # one key a message, 20 a file: 3 index files
                assert store.put(Message.create("T", b"v" * 100, keys=f"k{i}")).ok
            assert store.wait_dispatched(10)
        index = sorted((root / "index").iterdir())
        assert len(index) >= 3
        for p in index:
            sparsify(p)
        with MessageStore.open(root, _config(root)):
            pass  # the newest index file (and each queue's last file) gets its blocks back here
        older = {str(p): p.stat().st_blocks for p in index[:-1]}
        assert all(p.stat().st_blocks * 512 < p.stat().st_size for p in index[:-1])  # still sparse
        fill(mnt)
        child = subprocess.run([sys.executable, "-c", _QUERY, str(root)], capture_output=True, check=False,
                               timeout=60)
        assert child.returncode != -signal.SIGBUS, "the store was killed by SIGBUS"
        assert child.returncode == 0, child.stderr.decode(errors="replace")[-2000:]
        assert child.stdout.split() == [b"60", b"0"]
        assert {str(p): p.stat().st_blocks for p in index[:-1]} == older
