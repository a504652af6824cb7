"""Bytes of a running test broker's commitlog, changed and read in its segment files with plain file I/O (the
broker reads the same pages through its shared mapping, as it would read rotted sectors)."""

from __future__ import annotations

import os

from local_cluster import LocalCluster


def _segment(cluster: LocalCluster, position: int) -> tuple[str, int]:
    """The segment file holding commitlog *position*, and where in it."""
    segment_bytes = cluster.broker.store.config.mapped_file_size_commit_log
    start = position - position % segment_bytes
    return os.path.join(cluster.store_dir, "commitlog", f"{start:020d}"), position - start


def xor_commitlog_byte(cluster: LocalCluster, position: int, mask: int) -> int:
    """XOR the commitlog byte at *position* with *mask*; returns the byte as it was."""
    path, at = _segment(cluster, position)
    with open(path, "r+b") as segment:
        segment.seek(at)
        byte = segment.read(1)[0]
        segment.seek(at)
        segment.write(bytes([byte ^ mask]))
    return byte


def read_commitlog(cluster: LocalCluster, position: int, size: int) -> bytes:
    """The *size* commitlog bytes at *position* (within one segment) as its file holds them."""
    path, at = _segment(cluster, position)
    with open(path, "rb") as segment:
        segment.seek(at)
        return segment.read(size)
