"""Read-only opens of a sparse store (a Java broker's segments, a cp --sparse copy) on a tmpfs.

On tmpfs even a READ fault of a hole through a mapping allocates a page (private and read-only mappings
too; ext4 maps a zero page instead): on a full tmpfs that is SIGBUS and the reader was killed (exit 135 from
the shell) - ``store dump``, ``store verify``, ``MessageStore.open(read_only=True)`` and the snapshot's
commitlog views alike - and on one with room the "read-only" dump made the holes permanent blocks of the
store's files.  Holes now read as anonymous zero pages.  The readers run in child processes, so that a
SIGBUS fails the test instead of killing pytest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from rocketstore import MessageStore
from rocketstore.store.dump import dump_store

from .hunt17_diskfull_fs import fill, put_with_a_zero_page_record, small_fs, sparse_test_config, sparsify

_GEOMETRY = ["--segment-bytes", str(1 << 20), "--cq-bytes", str(20 * 4096), "--index-slots", "512",
             "--index-entries", "2048"]

_CONFIG = """
from rocketstore import StoreConfig
cfg = StoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_commit_log=1 << 20,
                  mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=512, max_index_num=2048)
"""

_READ_ONLY_OPEN = "import sys" + _CONFIG + textwrap.dedent("""
    from rocketstore import GetMessageStatus, MessageStore
    with MessageStore.open(sys.argv[1], cfg, read_only=True) as store:
        got = store.get("T", 0, 0, 100)
        assert got.status is GetMessageStatus.FOUND, got.status
        bodies = [m.body for m in got.messages]
        hits = [len(store.query("T", f"k{i}").messages) for i in range(12)]
        print(len(bodies), sum(len(b) for b in bodies), hits, len(store.query("T", "absent").messages))
""")

_SNAPSHOT_VIEWS = "import sys" + _CONFIG + textwrap.dedent("""
    from rocketstore.store.snapshot import StoreSnapshot
    with StoreSnapshot.open(sys.argv[1], cfg) as snap:
        assert snap.tails_agree()
        _, entries = snap.entries("T", 0, 0, snap.max_offset("T", 0))
        same = 0
        for offset, size, _ in entries.tolist():
            view = snap.span_view(offset, size)
            same += view is not None and view.tobytes() == snap.read_span(offset, size)
        print(len(entries), same)
""")


def _run(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *argv], capture_output=True, check=False, timeout=60)


def test_a_sparse_store_on_a_full_tmpfs_is_read_by_every_read_only_open_and_nothing_is_allocated(
        tmp_path: Path) -> None:
    with small_fs(tmp_path, "8m") as mnt:
        root = mnt / "store"
        put_with_a_zero_page_record(root)
        with MessageStore.open(root, sparse_test_config(root), read_only=True) as store:
            expected = json.loads(json.dumps(dump_store(store)))
        files = [p for p in root.rglob("*") if p.is_file() and (p.name.isdigit() or p.parent.name == "index")]
        assert len(files) == 3  # commitlog, consume queue, index file
        for p in files:
            sparsify(p)
        blocks = {str(p): p.stat().st_blocks for p in files}
        scratch = fill(mnt)

        children = {
            "dump": _run("-m", "rocketstore.cli.main", "store", "dump", *_GEOMETRY, str(root)),
            "verify": _run("-m", "rocketstore.cli.main", "store", "verify", *_GEOMETRY, str(root)),
            "read-only open": _run("-c", _READ_ONLY_OPEN, str(root)),
            "snapshot views": _run("-c", _SNAPSHOT_VIEWS, str(root)),
        }
        killed = [name for name, child in children.items() if child.returncode == -signal.SIGBUS]
        assert not killed, f"killed by SIGBUS: {killed}"
        for name, child in children.items():
            assert child.returncode == 0, (name, child.stderr.decode(errors="replace")[-2000:])
        assert json.loads(children["dump"].stdout) == expected
        assert b"OK: commitlog, consume queues and index agree" in children["verify"].stdout
        assert children["read-only open"].stdout.split(b"[")[0] == f"12 {11 * 100 + 3 * 4096 + 2} ".encode()
        assert b"[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] 0" in children["read-only open"].stdout
        assert children["snapshot views"].stdout.split() == [b"12", b"12"]

        # with room on the tmpfs, a read-only dump used to give every hole it read a page of the file system
        scratch.unlink()
        again = _run("-m", "rocketstore.cli.main", "store", "dump", *_GEOMETRY, str(root))
        assert again.returncode == 0, again.stderr.decode(errors="replace")[-2000:]
        assert json.loads(again.stdout) == expected
        assert {str(p): p.stat().st_blocks for p in files} == blocks
