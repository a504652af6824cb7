"""Index entries for many keys at once: vectorised key hashes and a vectorised append to one index file.

Dispatch hands the index a run of records (hundreds while puts stream in, a whole segment in abnormal
recovery).  One key at a time costs ~13 µs of Python (a per-character Java hash, then three struct calls and
a header rewrite); here a run costs a few numpy calls per distinct key length plus one write of its entries.
The bytes written are exactly those of ``IndexFile.put_key`` called in the same order (the unit tests
compare both).

Imports numpy, the hashing module and index_file's layouts; index_file imports this module lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rocketstore.message.hashing import index_key_hash

if TYPE_CHECKING:
    from rocketstore.store.index_file import IndexFile

__all__ = ["ENTRY_DTYPE", "index_key_hashes", "put_keys"]

#: one index entry (index_file.INDEX_ENTRY) as a numpy record
ENTRY_DTYPE = np.dtype([("key_hash", ">i4"), ("offset", ">i8"), ("time_diff", ">i4"), ("prev", ">i4")])
_HEADER_BYTES = 40
_MAX_INT = 0x7FFFFFFF
_POW31: dict[int, np.ndarray] = {}


def _powers(length: int) -> np.ndarray:
    """31**(length-1-j) mod 2**32 for j in 0..length-1, as uint64."""
    p = _POW31.get(length)
    if p is None:
        p = np.empty(length, dtype=np.uint64)
        acc = 1
        for j in range(length - 1, -1, -1):
            p[j] = acc
            acc = (acc * 31) & 0xFFFFFFFF
        if len(_POW31) < 4096:
            _POW31[length] = p
    return p


def index_key_hashes(topics: list[str], keys: list[str]) -> np.ndarray:
    """``index_key_hash(topic, key)`` of each pair, as int64: Java's String.hashCode of ``topic#key`` over
    UTF-16 units, made non-negative as RocketMQ does.  Strings of one length are hashed as one matrix
    product (mod 2**64 wrap-around keeps the value mod 2**32 exact)."""
    n = len(keys)
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    strings = [t + "#" + k for t, k in zip(topics, keys)]
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        g = groups.get(len(s))
        if g is None:
            groups[len(s)] = [i]
        else:
            g.append(i)
    for length, members in groups.items():
        if len(members) < 4:
            for i in members:
                out[i] = index_key_hash(topics[i], keys[i])
            continue
        raw = "".join([strings[i] for i in members]).encode("utf-16-be", "surrogatepass")
        if len(raw) != 2 * length * len(members):  # characters outside the BMP: two units each
            for i in members:
                out[i] = index_key_hash(topics[i], keys[i])
            continue
        units = np.frombuffer(raw, dtype=">u2").reshape(len(members), length).astype(np.uint64)
        h = (units @ _powers(length)) & np.uint64(0xFFFFFFFF)
        out[np.asarray(members, dtype=np.intp)] = h.astype(np.int64)
    signed = np.where(out >= 0x80000000, out - 0x100000000, out)
    return np.where(signed == -0x80000000, 0, np.abs(signed))


def put_keys(f: IndexFile, hashes: np.ndarray, offsets: np.ndarray, timestamps: np.ndarray) -> int:
    """Append up to the file's room of (hash, commitlog offset, store time) entries, in order, exactly as
    that many ``put_key`` calls would; returns how many went in (fewer than given when the file fills)."""
    room = f.entry_count - f.index_count
    n = min(room, len(hashes))
    if n <= 0:
        return 0
    k = 0
    if f.index_count <= 1:  # the first entry also sets the file's begin timestamp and offset
        f.put_key(int(hashes[0]), int(offsets[0]), int(timestamps[0]))
        k = 1
    if k >= n:
        return n
    h = hashes[k:n]
    off = offsets[k:n]
    ts = timestamps[k:n]
    m = n - k
    ic = f.index_count
    buf = f.file.buffer
    slot = h % f.slot_count
    entry_no = np.arange(ic, ic + m, dtype=np.int64)
    slots = np.frombuffer(buf, dtype=">i4", count=f.slot_count, offset=_HEADER_BYTES)
    try:
        old = slots[slot].astype(np.int64)
        old[(old <= 0) | (old > ic)] = 0
        order = np.argsort(slot, kind="stable")
        ss = slot[order]
        first = np.ones(m, dtype=bool)
        first[1:] = ss[1:] != ss[:-1]
        last = np.ones(m, dtype=bool)
        last[:-1] = first[1:]
        e_sorted = entry_no[order]
        prev_sorted = np.empty(m, dtype=np.int64)
        prev_sorted[1:] = e_sorted[:-1]
        old_sorted = old[order]
        prev_sorted[first] = old_sorted[first]
        prev = np.empty(m, dtype=np.int64)
        prev[order] = prev_sorted
        if f.begin_timestamp <= 0:
            time_diff = np.zeros(m, dtype=np.int64)
        else:
            time_diff = np.clip((ts - f.begin_timestamp) // 1000, 0, _MAX_INT)
        rec = np.empty(m, dtype=ENTRY_DTYPE)
        rec["key_hash"] = h
        rec["offset"] = off
        rec["time_diff"] = time_diff
        rec["prev"] = prev
        start = f._entries_at + ic * 20
        buf[start : start + m * 20] = rec.tobytes()
        # entries first, then the slots that publish them (a concurrent query never sees a torn entry)
        slots[ss[last]] = e_sorted[last]
        new_slots = int(np.count_nonzero(old_sorted[first] == 0))
    finally:
        del slots
    f.hash_slot_count += new_slots
    f.index_count = ic + m
    f.end_phy_offset = int(off[-1])
    f.end_timestamp = int(ts[-1])
    f._write_header()
    f.file.touch_modified()
    return n
