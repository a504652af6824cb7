"""Ceilings measured in the same run: what the disk and pure Python can do at all.

* ``encode_into_warm_mmap``: the put path's floor in pure Python.  For each message: CRC-32 of the body,
  ``struct.pack_into`` of the 20-field header (rocketstore.message.record's layout), and the body, topic and
  properties joined and copied after it, into a file-backed shared mapping whose pages were touched
  beforehand.  No validation, no locking, no result object, properties pre-encoded.
* ``sequential_write_fdatasync``: 1 MiB ``os.write`` calls then one ``fdatasync`` (MB/s).
* ``sequential_read``: ``readinto`` of 1 MiB chunks (MB/s); from the page cache when the files are warm.
* ``walk_records_with_crc``: a pure-Python record walk with the body CRC check over the same files
  (what recovery cannot avoid doing, without decoding, dispatching or indexing anything).
* ``fdatasync_latencies``: 4 KiB ``pwrite`` into a preallocated file, then ``fdatasync``, one at a time.
* ``slice_from_warm_mmap``: the get path's floor: copy each record out of a warm mapping, 32 per call.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import zlib

from bench.common import TOPIC, properties_bytes
from rocketstore.message.record import MESSAGE_MAGIC, Message, header_layout

__all__ = [
    "WarmMap",
    "encode_into_warm_mmap",
    "fdatasync_latencies",
    "sequential_read",
    "sequential_write_fdatasync",
    "slice_from_warm_mmap",
    "walk_records_with_crc",
]

_PAGE = 4096
_CHUNK = 1 << 20
_HEAD = struct.Struct(">ii")
_INT = struct.Struct(">i")


class WarmMap:
    """A file-backed shared mapping (like a commitlog segment) with every page touched once."""

    def __init__(self, path: str, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.posix_fallocate(self._fd, 0, size_bytes)
        self.mm = mmap.mmap(self._fd, size_bytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        mm = self.mm
        for pos in range(0, size_bytes, _PAGE):
            mm[pos] = 0

    def close(self) -> None:
        self.mm.close()
        os.close(self._fd)
        os.unlink(self.path)


def encode_into_warm_mmap(warm: WarmMap, messages: list[Message], n: int) -> float:
    """Records per second of the hand-written encode loop over *n* records (messages taken in turn)."""
    header = header_layout(False, False)
    hsize = header.size
    pack = header.pack_into
    crc32 = zlib.crc32
    join = b"".join
    ip = bytes([127, 0, 0, 1])  # IPv4 born and store hosts, as the store writes by default
    topic = TOPIC.encode()
    topic_part = bytes([len(topic)]) + topic
    # per message: (body, topic, properties with their length prefix, record size), pre-encoded once
    parts = []
    for m in messages:
        props = properties_bytes(m)
        prop_part = len(props).to_bytes(2, "big") + props
        parts.append((m.body, prop_part, hsize + len(m.body) + len(topic_part) + len(prop_part), len(m.body)))
    seq = (parts * (n // len(parts) + 1))[:n]
    mm = warm.mm
    limit = warm.size_bytes - max(p[2] for p in parts)
    pos = 0
    store_ts = int(time.time() * 1000)
    t0 = time.perf_counter()
    for i, (body, prop_part, total, body_len) in enumerate(seq):
        if pos > limit:
            pos = 0
        pack(mm, pos, total, MESSAGE_MAGIC, crc32(body) & 0x7FFFFFFF, 0, 0, i, pos, 0, store_ts, ip, 40000,
             store_ts, ip, 10911, 0, 0, body_len)
        mm[pos + hsize : pos + total] = join((body, topic_part, prop_part))
        pos += total
    return n / (time.perf_counter() - t0)


def sequential_write_fdatasync(path: str, nbytes: int) -> float:
    """MB/s (10^6 bytes) of writing *nbytes* to a new file in 1 MiB calls and one fdatasync."""
    chunk = os.urandom(_CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        written = 0
        t0 = time.perf_counter()
        while written < nbytes:
            written += os.write(fd, chunk[: min(_CHUNK, nbytes - written)])
        os.fdatasync(fd)
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
        os.unlink(path)
    return nbytes / dt / 1e6


def sequential_read(ranges: list[tuple[str, int]]) -> tuple[float, int]:
    """(MB/s, bytes) of reading the first *n* bytes of each (path, n) in 1 MiB ``readinto`` calls."""
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    total = 0
    t0 = time.perf_counter()
    for path, n in ranges:
        with open(path, "rb", buffering=0) as fh:
            left = n
            while left > 0:
                got = fh.readinto(view[: min(_CHUNK, left)])
                if not got:
                    break
                total += got
                left -= got
    dt = time.perf_counter() - t0
    return total / dt / 1e6, total


def walk_records_with_crc(ranges: list[tuple[str, int]]) -> tuple[float, int]:
    """(MB/s, records) of the least a pure-Python recovery must do: walk the first *n* bytes of each
    (path, n) record by record (TOTALSIZE, MAGICCODE, SYSFLAG, BODYLENGTH) and check each body's CRC-32,
    stopping at a blank record or the end; nothing is decoded, dispatched or indexed."""
    head = _HEAD
    word = _INT
    crc32 = zlib.crc32
    total = 0
    records = 0
    t0 = time.perf_counter()
    for path, n in ranges:
        with open(path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mm)
        try:
            pos = 0
            while pos + 8 <= n:
                size, magic = head.unpack_from(mm, pos)
                if magic != MESSAGE_MAGIC:
                    break
                flags = word.unpack_from(mm, pos + 36)[0]
                body_at = pos + 84 + (12 if flags & 0x10 else 0) + (12 if flags & 0x20 else 0)
                body_len = word.unpack_from(mm, body_at)[0]
                crc = word.unpack_from(mm, pos + 8)[0]
                if crc32(view[body_at + 4 : body_at + 4 + body_len]) & 0x7FFFFFFF != crc:
                    raise ValueError(f"{path}: body CRC mismatch at {pos}")
                pos += size
                records += 1
            total += pos
        finally:
            view.release()
            mm.close()
    return total / (time.perf_counter() - t0) / 1e6, records


def fdatasync_latencies(path: str, n: int) -> list[float]:
    """Seconds of each of *n* (4 KiB pwrite into a preallocated file + fdatasync)."""
    block = os.urandom(_PAGE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    samples: list[float] = []
    try:
        os.posix_fallocate(fd, 0, n * _PAGE)
        os.fsync(fd)
        clock = time.perf_counter
        for i in range(n):
            t0 = clock()
            os.pwrite(fd, block, i * _PAGE)
            os.fdatasync(fd)
            samples.append(clock() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    return samples


def slice_from_warm_mmap(warm: WarmMap, record_bytes: int, n: int, per_call: int = 32) -> float:
    """Records per second of copying *n* records of *record_bytes* out of a warm mapping, *per_call* at a
    time, each call building its list of records (the least a get in pure Python must do)."""
    count = min(n, warm.size_bytes // record_bytes)
    offsets = [i * record_bytes for i in range(count)]
    seq = (offsets * (n // count + 1))[:n]
    mm = warm.mm
    got = 0
    t0 = time.perf_counter()
    for start in range(0, n, per_call):
        batch = [mm[o : o + record_bytes] for o in seq[start : start + per_call]]
        got += len(batch)
    return got / (time.perf_counter() - t0)
