"""Properties and Java hashes for the rebuild's scan, a whole chunk of records at a time (numpy).

``ChunkProperties`` lays the properties strings of a chunk end to end, each preceded by the property
separator, so that every ``name 0x01 value`` pair starts right after a separator byte; a property's value
per record is then found with byte comparisons at the separators (``parse_properties``' rules: a pair needs
a non-empty value, the last one wins).  ``SpanHasher`` gives Java's ``String.hashCode`` of any byte span of
an ASCII buffer: the sum of c_i 31**(b-1-i) over [a, b) is 31**(b-1) (P[b-1] - P[a-1]) with P the prefix
sums of c_i 31**-i modulo 2**64 (31 is odd, so invertible; the low 32 bits are Java's int arithmetic).

Pure numpy; the records whose properties are not ASCII are left to the caller (rebuild_scan.py).
"""

from __future__ import annotations

import numpy as np

from rocketstore.message.hashing import java_string_hash
from rocketstore.message.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, PropertyName

__all__ = ["ChunkProperties", "SpanHasher", "as_int32", "fold_key_hash"]

_MASK32 = np.uint64(0xFFFFFFFF)


_INV31 = pow(31, -1, 1 << 64)
_POW: list[np.ndarray] = []  # [31**i, 31**-i] mod 2**64, grown on demand


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    if not _POW or len(_POW[0]) < n:
        size = max(n, 1 << 16)
        size = 1 << (size - 1).bit_length()
        up = np.full(size, 31, dtype=np.uint64)
        up[0] = 1
        down = np.full(size, _INV31, dtype=np.uint64)
        down[0] = 1
        with np.errstate(over="ignore"):
            _POW[:] = [np.cumprod(up, dtype=np.uint64), np.cumprod(down, dtype=np.uint64)]
    return _POW[0], _POW[1]


class SpanHasher:
    """String.hashCode (mod 2**32) of any byte span of one ASCII buffer: sum c_i 31**(b-1-i) over [a, b)
    is 31**(b-1) * (P[b-1] - P[a-1]) with P the prefix sums of c_i 31**-i (31 is odd: invertible)."""

    def __init__(self, buf: np.ndarray) -> None:
        up, down = _powers(len(buf) + 1)
        self.up = up
        with np.errstate(over="ignore"):
            self.prefix = np.concatenate(([np.uint64(0)], np.cumsum(buf.astype(np.uint64) * down[: len(buf)],
                                                                     dtype=np.uint64)))

    def span(self, a: np.ndarray, b: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """uint64 hash state (low 32 bits significant) of spans [a, b), continuing from *start* states."""
        with np.errstate(over="ignore"):
            h = self.up[np.maximum(b - 1, 0)] * (self.prefix[b] - self.prefix[a])
            if start is not None:
                h = h + start * self.up[b - a]
        h = h & _MASK32
        return np.where(b > a, h, start & _MASK32 if start is not None else np.uint64(0))


def as_int32(h: np.ndarray) -> np.ndarray:
    v = h.astype(np.int64)
    return np.where(v >= 0x80000000, v - 0x100000000, v)


def fold_key_hash(h: np.ndarray) -> np.ndarray:
    """Index key hash: abs() of the Java int, Integer.MIN_VALUE -> 0."""
    s = as_int32(h)
    return np.where(s == -0x80000000, 0, np.abs(s))



_SEP = ord(PROPERTY_SEPARATOR)
_NV = NAME_VALUE_SEPARATOR.encode()
_SPACE = ord(PropertyName.KEY_SEPARATOR)


class ChunkProperties:
    """The properties strings of a chunk, laid end to end in one buffer, each preceded by the property
    separator, so that every ``name 0x01 value`` pair starts right after a separator byte."""

    def __init__(self, arr: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        lengths = b - a
        n = len(a)
        self.n = n
        self.record_at = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
        total = int(lengths.sum()) + n
        buf = np.full(total, _SEP, dtype=np.uint8)
        is_data = np.ones(total, dtype=bool)
        is_data[self.record_at] = False
        dst = np.flatnonzero(is_data)
        buf[dst] = arr[dst + np.repeat(a - self.record_at - 1, lengths)]
        self.buf = buf
        hi = (buf >= 0x80).astype(np.int64)
        self.non_ascii = np.add.reduceat(hi, self.record_at) > 0 if n else np.zeros(0, bool)
        self.seps = np.flatnonzero(buf == _SEP)
        #: the record of each separator, and where the item it opens ends
        self.sep_record = np.cumsum(~is_data[self.seps]) - 1
        self.next_sep = np.append(self.seps[1:], len(buf))
        self._values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._hasher: SpanHasher | None = None

    def value(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(value start, value end) per record of the last well-formed *name* pair, (0, 0) when absent
        (``parse_properties``: a pair needs a non-empty value; the last one wins)."""
        got = self._values.get(name)
        if got is not None:
            return got
        pattern = name.encode() + _NV
        buf, seps = self.buf, self.seps
        at = np.flatnonzero(seps + len(pattern) < len(buf))
        ok = np.ones(len(at), dtype=bool)
        for j, byte in enumerate(pattern):
            ok &= buf[seps[at] + 1 + j] == byte
        at = at[ok]
        value_start = seps[at] + 1 + len(pattern)
        value_end = self.next_sep[at]
        keep = value_end > value_start
        at, value_start, value_end = at[keep], value_start[keep], value_end[keep]
        rec = self.sep_record[at]
        start = np.zeros(self.n, dtype=np.int64)
        end = np.zeros(self.n, dtype=np.int64)
        start[rec] = value_start  # later pairs of the same record overwrite earlier ones: the last wins
        end[rec] = value_end
        self._values[name] = (start, end)
        return start, end

    def present(self, name: str) -> np.ndarray:
        start, end = self.value(name)
        return end > start

    @property
    def hasher(self) -> SpanHasher:
        if self._hasher is None:
            self._hasher = SpanHasher(self.buf)
        return self._hasher

    def tags_codes(self) -> np.ndarray:
        start, end = self.value(PropertyName.TAGS)
        return as_int32(self.hasher.span(start, end))

    def key_hashes(self, topic_ids: np.ndarray, topic_names: list[str],
                   indexed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(record, folded hash) of every index key in dispatch order: UNIQ_KEY, then the KEYS tokens."""
        u_start, u_end = self.value(PropertyName.UNIQ_KEY)
        k_start, k_end = self.value(PropertyName.KEYS)
        uniq = np.flatnonzero((u_end > u_start) & indexed)
        # KEYS tokens: maximal runs of non-space bytes inside a KEYS value
        marks = np.zeros(len(self.buf) + 1, dtype=np.int64)
        has_keys = (k_end > k_start) & indexed
        np.add.at(marks, k_start[has_keys], 1)
        np.add.at(marks, k_end[has_keys], -1)
        inside = np.cumsum(marks[:-1]) > 0
        token = inside & (self.buf != _SPACE)
        edge = np.diff(np.concatenate(([False], token, [False])).astype(np.int8))
        t_start = np.flatnonzero(edge == 1)
        t_end = np.flatnonzero(edge == -1)
        t_rec = np.searchsorted(self.record_at, t_start, side="right") - 1
        prefix = np.array([java_string_hash(t + "#") & 0xFFFFFFFF for t in topic_names] + [0], dtype=np.uint64)
        rec = np.concatenate((uniq, t_rec))
        a = np.concatenate((u_start[uniq], t_start))
        b = np.concatenate((u_end[uniq], t_end))
        kind = np.concatenate((np.zeros(len(uniq), np.int64), np.ones(len(t_rec), np.int64)))
        order = np.lexsort((a, kind, rec))
        rec, a, b = rec[order], a[order], b[order]
        h = self.hasher.span(a, b, prefix[topic_ids[rec]])
        return rec.astype(np.int64), fold_key_hash(h)
