"""``pipeline rebuild --output DIR`` only reads the store it rebuilds from, and that store may be a sparse
copy (a Java broker's segments, cp --sparse) on a tmpfs.  Planning opened each commitlog segment writable
and gave its holes blocks (the input store grew, and on a full disk the plan fell back to whole segments),
and the scan mapped the segments shared, where on tmpfs a read of a hole allocates: on a full one, SIGBUS
killed the scanning process.  The rebuild runs in a child process here, so that a SIGBUS fails the test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from .hunt17_diskfull_fs import fill, put_with_a_zero_page_record, small_fs, sparsify

_REBUILD = textwrap.dedent("""
    import json, sys
    from rocketstore import StoreConfig
    from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial
    cfg = StoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_commit_log=1 << 20,
                      mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=512, max_index_num=2048)
    plan = plan_rebuild(sys.argv[1], cfg, range_bytes=4096)
    report = rebuild_store(plan, scan_serial(plan), output_dir=sys.argv[2])
    print(json.dumps([report.record_count, report.valid_end, report.cq_entry_count, report.index_key_count]))
""")


def test_a_rebuild_from_a_sparse_store_on_tmpfs_reads_it_without_allocating_or_sigbus(tmp_path: Path) -> None:
    with small_fs(tmp_path, "8m") as mnt:
        root = mnt / "store"
        end = put_with_a_zero_page_record(root)
        segment = root / "commitlog" / "00000000000000000000"
        sparsify(segment)
        blocks = segment.stat().st_blocks

        # with room on the tmpfs: the input store keeps its holes
        room = subprocess.run([sys.executable, "-c", _REBUILD, str(root), str(tmp_path / "out1")],
                              capture_output=True, check=False, timeout=60)
        assert room.returncode == 0, room.stderr.decode(errors="replace")[-2000:]
        got = json.loads(room.stdout)
        assert got == [12, end, 12, 12]
        assert segment.stat().st_blocks == blocks

        # on a full one: read, not killed
        fill(mnt)
        full = subprocess.run([sys.executable, "-c", _REBUILD, str(root), str(tmp_path / "out2")],
                              capture_output=True, check=False, timeout=60)
        assert full.returncode != -signal.SIGBUS, "the rebuild was killed by SIGBUS"
        assert full.returncode == 0, full.stderr.decode(errors="replace")[-2000:]
        assert json.loads(full.stdout) == got
        assert segment.stat().st_blocks == blocks
