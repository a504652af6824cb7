"""Opening a store after a crash, with the page cache still warm (kill -9, not a reboot), checks each
consume queue's tail without reading the whole segment.

The tail past a queue's valid prefix is zero-checked after every crash.  The file system's SEEK_DATA counts
every cached page as data, zeros read from a preallocated (unwritten) extent too, and the writer's page
faults read ahead whole segments into the cache: the check then read, so mapped in, every queue's whole
segment (6 MB a queue by default; 500 queues took ~3 GB and over a second).  The memory the opening process
maps in is the measure (RssFile), as in test_hunt19_fdscale_open_many_queues; a stale entry written to a
far page, never synced, must still be zeroed."""

from __future__ import annotations

import os

import pytest

QUEUES = 12
CQ_SEGMENT_BYTES = 300_000 * 20  # RocketMQ's default: 6 MB a queue
FAR_SLOT = 100_000  # 2 MB into the segment: past the first pages, in an unwritten extent


def _unwritten_extents_seen(directory) -> bool:
    """Whether the file system reports a fresh preallocated file's extent as unwritten (FIEMAP)."""
    import fcntl
    import struct

    path = os.path.join(str(directory), "probe")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, 1 << 20)
        buf = bytearray(32 + 56)
        struct.pack_into("=QQIIII", buf, 0, 0, 1 << 20, 1, 0, 1, 0)  # FIEMAP_FLAG_SYNC, room for one
        fcntl.ioctl(fd, 0xC020660B, buf)  # FS_IOC_FIEMAP
        mapped = struct.unpack_from("=I", buf, 20)[0]
        flags = struct.unpack_from("=I", buf, 32 + 40)[0]
    except OSError:
        return False
    finally:
        os.close(fd)
        os.unlink(path)
    return mapped == 1 and bool(flags & 0x800)  # FIEMAP_EXTENT_UNWRITTEN


#: the store of these cases; ``cq_path(q)``: queue q's consume-queue segment (topic T<q // 4>, queue q % 4)
_PRELUDE = """
    import struct
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=%d,
                      preallocate_commit_log=False, warm_ahead_bytes=0,
                      max_hash_slot_num=100, max_index_num=400)

    def cq_path(q):
        return os.path.join(root, "consumequeue", "T%%d" %% (q // 4), str(q %% 4), "%%020d" %% 0)
""" % CQ_SEGMENT_BYTES


def test_crash_open_with_a_warm_cache_reads_only_what_was_written(tmp_path, store_child) -> None:
    if not _unwritten_extents_seen(tmp_path):
        pytest.skip("the file system here does not report unwritten extents (FIEMAP)")
    root = str(tmp_path / "store")
    store_child("""
        store = MessageStore.open(root, cfg)
        first = None
        for q in range(%d):
            put = store.put(Message(topic="T%%d" %% (q // 4), queue_id=q %% 4, body=b"m%%d" %% q))
            assert put.status.name == "PUT_OK"
            first = first or put
        assert store.wait_dispatched()
        store.close()
        # the page cache holds every queue's whole segment, as after the writer's faults read ahead
        for q in range(%d):
            with open(cq_path(q), "rb") as f:
                while f.read(1 << 20):
                    pass
        # a stale entry far past queue 0's end, in the cache only (not synced), as a torn earlier life left it
        fd = os.open(cq_path(0), os.O_WRONLY)
        os.pwrite(fd, struct.pack(">qiq", first.commit_log_offset, first.wrote_bytes, 0), %d * 20)
        os.close(fd)
        open(os.path.join(root, "abort"), "wb").close()  # as if the store had been killed
    """ % (QUEUES, QUEUES, FAR_SLOT), root, _PRELUDE)
    out = store_child("""
        before = proc_status_bytes("RssFile")
        store = MessageStore.open(root, cfg, background=False)
        grew = proc_status_bytes("RssFile") - before
        bodies = [store.get("T%%d" %% (q // 4), q %% 4, 0, 1).messages[0].body.decode() for q in range(%d)]
        max_offset = store.max_offset("T0", 0)
        store.close()
        with open(cq_path(0), "rb") as f:
            f.seek(%d * 20)
            stale = f.read(20)
        print(grew, ",".join(bodies), max_offset, int(stale == bytes(20)))
    """ % (QUEUES, FAR_SLOT), root, _PRELUDE)
    grew, bodies, max_offset, stale_zeroed = int(out[0]), out[1], out[2], out[3]
    assert bodies == ",".join(f"m{q}" for q in range(QUEUES))
    assert max_offset == "1"
    assert stale_zeroed == "1"  # the tail past the valid prefix was still zeroed where it held something
    # one segment read whole would be 6 MB; all of them QUEUES x 6 MB
    assert grew < CQ_SEGMENT_BYTES, grew
