"""Index entries for many keys at once: vectorised key hashes and a vectorised append to one index file.

Dispatch hands the index a run of records (hundreds while puts stream in, a whole segment in abnormal
recovery).  One key at a time costs several µs of Python (a Java hash, then three struct calls and a header
rewrite); here a run's keys are hashed from one encoded string (``joined_key_hashes``) and its entries,
chains and slots written with a few dozen numpy calls, whatever the run's length.
The bytes written are exactly those of ``IndexFile.put_key`` called in the same order (the unit tests
compare both).

Imports numpy, the hashing module and index_file's layouts; index_file imports this module lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rocketstore.message.hashing import index_key_hash_with_prefix, index_key_prefix

if TYPE_CHECKING:
    from rocketstore.store.index_file import IndexFile

__all__ = ["ENTRY_DTYPE", "index_key_hashes", "joined_key_hashes", "key_hashes", "put_keys"]

#: one index entry (index_file.INDEX_ENTRY) as a numpy record
ENTRY_DTYPE = np.dtype([("key_hash", ">i4"), ("offset", ">i8"), ("time_diff", ">i4"), ("prev", ">i4")])
_HEADER_BYTES = 40
_MAX_INT = 0x7FFFFFFF
_MASK32 = np.uint64(0xFFFFFFFF)
#: 31**e mod 2**32 for e = 0, 1, ...; grown on demand to the longest key seen
_pow31 = np.ones(1, dtype=np.uint64)


def _powers_upto(length: int) -> np.ndarray:
    """The table of 31**e mod 2**32 (uint64) for e = 0..length at least."""
    global _pow31
    table = _pow31
    if len(table) <= length:
        grown = np.empty(max(length + 1, 2 * len(table), 64), dtype=np.uint64)
        acc = 1
        for e in range(len(grown)):
            grown[e] = acc
            acc = (acc * 31) & 0xFFFFFFFF
        _pow31 = table = grown
    return table


def key_hashes(prefixes: np.ndarray | int, keys: Sequence[str]) -> np.ndarray:
    """``index_key_hash(topic, key)`` of each key, as int64, given the hash state of each key's ``topic#``
    (``hashing.index_key_prefix``; one int when every key has the same topic)."""
    if not keys:
        return np.empty(0, dtype=np.int64)
    return joined_key_hashes(prefixes, "\x00".join(keys), keys)


def joined_key_hashes(prefixes: np.ndarray | int, joined: str, keys: Sequence[str]) -> np.ndarray:
    """``key_hashes`` of *keys*, given also as *joined*: ``"\\x00".join(keys)`` (which the caller has made
    anyway, to look at all keys at once).

    Java's String.hashCode of ``topic#key`` is prefix * 31**len(key) + sum(unit[j] * 31**(len-1-j)) mod
    2**32 over the key's UTF-16 units.  The whole string is encoded once; a key's units are those between
    two NUL units (no other character encodes to a zero unit).  Keys of one length, the common case
    (RocketMQ's UNIQ_KEYs are all 32 hex digits), form a matrix whose product with the powers of 31 gives
    every key's sum at once; otherwise each unit is weighted by 31 to its distance from the end of its own
    key and one cumulative sum gives each key's sum as a difference of two entries.  uint64 arithmetic
    wraps mod 2**64, which keeps every value exact mod 2**32.  The result is made non-negative as RocketMQ
    does (abs, with Integer.MIN_VALUE mapped to 0)."""
    n = len(keys)
    if joined.count("\x00") != n - 1:  # a key holds NUL itself: no unambiguous separators
        if isinstance(prefixes, int):
            return np.fromiter((index_key_hash_with_prefix(prefixes, k) for k in keys), dtype=np.int64, count=n)
        return np.fromiter(map(index_key_hash_with_prefix, prefixes.tolist(), keys), dtype=np.int64, count=n)
    units = np.frombuffer(joined.encode("utf-16-be", "surrogatepass"), dtype=">u2")
    total = len(units)
    prefix = np.asarray(prefixes, dtype=np.uint64)
    width, rest = divmod(total + 1, n)
    length = width - 1
    if rest == 0 and (n == 1 or not units[length : total : width].any()):
        # every key has *length* units: the n-1 separators sit at every width-th unit
        table = _powers_upto(length)
        if length:
            matrix = np.empty((n, width), dtype=np.uint64)
            matrix.reshape(-1)[:total] = units
            own = matrix[:, :length] @ table[length - 1 :: -1]
        else:
            own = np.zeros(n, dtype=np.uint64)
        h = (prefix * table[length] + own) & _MASK32
    else:
        seps = np.flatnonzero(units == 0)
        ends = np.empty(n, dtype=np.int64)
        ends[:-1] = seps
        ends[-1] = total
        lengths = ends.copy()
        lengths[1:] -= seps + 1
        table = _powers_upto(int(lengths.max()))
        # each unit's key (a separator counts with the next key; its unit is 0, so its weight is moot)
        key_of = np.zeros(total, dtype=np.int64)
        key_of[seps] = 1
        np.cumsum(key_of, out=key_of)
        exponent = ends[key_of]
        exponent -= np.arange(1, total + 1, dtype=np.int64)
        weighted = units.astype(np.uint64)
        weighted *= table[exponent]
        running = np.zeros(total + 1, dtype=np.uint64)
        np.cumsum(weighted, out=running[1:])
        own = running[ends] - running[ends - lengths]  # uint64 subtraction wraps: still exact mod 2**32
        h = (prefix * table[lengths] + own) & _MASK32
    # abs() of the signed 32-bit value: min(h, 2**32 - h); Integer.MIN_VALUE (h = 2**31) stays negative in
    # Java and becomes 0, which the final mask does (every other result is below 2**31)
    negated = np.negative(h)
    negated &= _MASK32
    np.minimum(h, negated, out=h)
    h &= np.uint64(0x7FFFFFFF)
    return h.astype(np.int64)


def index_key_hashes(topics: list[str], keys: list[str]) -> np.ndarray:
    """``index_key_hash(topic, key)`` of each pair, as int64 (see ``key_hashes``)."""
    if not keys:
        return np.empty(0, dtype=np.int64)
    first = topics[0]
    if topics.count(first) == len(topics):
        return key_hashes(index_key_prefix(first), keys)
    prefixes = np.fromiter(map(index_key_prefix, topics), dtype=np.uint64, count=len(topics))
    return key_hashes(prefixes, keys)


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
        order = np.argsort(slot, kind="stable")
        ss = slot[order]
        first = np.ones(m, dtype=bool)
        np.not_equal(ss[1:], ss[:-1], out=first[1:])
        distinct = bool(first.all())
        old = slots[slot].astype(np.int64)
        # put_key's check, against the entry count at the time of each put (= the entry's own number): a
        # stale slot past the count (a header older than its slots after a crash) is treated as empty
        old[(old <= 0) | (old > entry_no)] = 0
        if distinct:
            # no two keys of the run share a slot (most runs: a few hundred keys over millions of slots):
            # each entry's previous is its slot's old value, and each slot gets its one entry
            prev = old
            new_slots = m - int(np.count_nonzero(old))
        else:
            last = np.ones(m, dtype=bool)
            last[:-1] = first[1:]
            e_sorted = entry_no[order]
            prev_sorted = np.empty(m, dtype=np.int64)
            prev_sorted[1:] = e_sorted[:-1]
            old_sorted = old[order]
            prev_sorted[first] = old_sorted[first]
            prev = np.empty(m, dtype=np.int64)
            prev[order] = prev_sorted
            new_slots = int(np.count_nonzero(old_sorted[first] == 0))
        rec = np.empty(m, dtype=ENTRY_DTYPE)
        rec["key_hash"] = h
        rec["offset"] = off
        if f.begin_timestamp <= 0:
            rec["time_diff"] = 0
        else:
            time_diff = ts - f.begin_timestamp
            time_diff //= 1000  # floor, not Java's truncation: they differ only below 0, which clamps to 0
            np.maximum(time_diff, 0, out=time_diff)
            np.minimum(time_diff, _MAX_INT, out=time_diff)
            rec["time_diff"] = time_diff
        rec["prev"] = prev
        start = f._entries_at + ic * 20
        buf[start : start + m * 20] = rec.view(np.uint8)  # type: ignore[call-overload]
        # the count before the slots: a concurrent query takes a slot past the count for a stale one (and
        # found none of the keys in that slot's chain)
        f.index_count = ic + m
        # entries first, then the slots that publish them (a concurrent query never sees a torn entry)
        if distinct:
            slots[slot] = entry_no
        else:
            slots[ss[last]] = e_sorted[last]
    finally:
        del slots
    f.hash_slot_count += new_slots
    f.index_count = ic + m
    f.end_phy_offset = int(off[-1])
    f.end_timestamp = int(ts[-1])
    f._write_header()
    f.file.touch_modified()
    return n
