"""Abnormal recovery's record walk, a chunk of records at a time with numpy.

Recovery after a crash re-checks every record from the first segment it does not trust, so the walk is the
whole cost of opening a big store.  Per chunk of up to ``CHUNK_RECORDS`` records:

1. ``walk``: follow the TOTALSIZE chain (the one step that is sequential).  A run of records of one size
   (what one producer writes) is checked with a single strided numpy read: the 8 bytes at ``pos + j*size``
   must carry that size and the message magic for every j, which is exactly what stepping one record at a
   time would read.  Anything else is stepped in Python, one ``struct`` call per record.
2. ``chunk``: the length checks of ``recovery.validate_record`` for the whole chunk with a few numpy
   reads (strided views of the mapping for an evenly spaced run, gathers otherwise; any host family: the
   field positions come from record.py's layouts), then the body CRCs in one tight ``zlib.crc32`` loop over
   memoryview slices (no copies).  That loop is the floor of this design: ~0.7 µs per 1 KiB record, about
   2 GB/s, where a raw page-cache read runs at ~5 GB/s.
3. ``topic_ids``: the topic of every record by comparing its bytes with each distinct topic of the chunk
   (usually one), vectorised; names decode once.

4. ``UniformProperties``: the properties of one producer's records (one length, names and separators in
   the same places) as a byte matrix whose value columns hash with one matrix product;
   ``GroupedProperties`` splits a chunk by properties length, a matrix for each group of one shape and the
   general ``rebuild_props.ChunkProperties`` for the rest.  Recovery parses properties only for the records
   it actually re-dispatches; the rebuild scan parses them all.

Imports numpy and record layout facts only; recovery.py calls it.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from dataclasses import dataclass
from typing import Self

import numpy as np

from rocketstore.message.columnar import header_fields, unaligned
from rocketstore.message.hashing import java_string_hash
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_BYTES,
    QUEUE_OFFSET_POS,
    SYS_FLAG_POS,
    SysFlag,
    header_layout,
    store_timestamp_position,
)
from rocketstore.store.rebuild_props import ChunkProperties, as_int32, fold_key_hash

__all__ = ["CHUNK_RECORDS", "Chunk", "GroupedProperties", "SegmentReader", "UniformProperties", "followed_at",
           "stop_reason"]

#: records per chunk: bounds the gathers' temporaries and is the dispatch run length
CHUNK_RECORDS = 16384
_HEAD = struct.Struct(">ii")
_V4_FIELDS = header_fields(header_layout(False, False))
_CRC_POS = _V4_FIELDS["body_crc"][0]
_QUEUE_ID_POS = _V4_FIELDS["queue_id"][0]
#: where BODYLENGTH sits, by the sysFlag's host-family bits >> 4 (born v6 = 1, store v6 = 2)
_BODY_LEN_POS = np.array([header_layout(bool(b & 1), bool(b & 2)).size - 4 for b in range(4)], dtype=np.int64)
#: where STORETIMESTAMP sits, by the born-host v6 bit >> 4
_STORE_TS_POS = np.array([store_timestamp_position(0), store_timestamp_position(SysFlag.BORNHOST_V6)],
                         dtype=np.int64)
#: equal sizes in a row before the walk tries a strided run check, and the first run length it tries
_RUN_AFTER = 3
_RUN_FIRST = 64


def followed_at(mm: mmap.mmap | bytes, end: int, limit: int) -> bool:
    """Whether a record head sits at *end*: a message that fits before *limit*, or the end-of-file blank.

    The body CRC does not cover topic and properties, so a record whose last byte is zero may have lost its
    end (a torn write into a zero-filled segment).  But 4.9.3 stores no separator after the last property,
    so a record whose last property value ends in U+0000 ends in a zero byte too.  Records are written in
    order, so one that something valid follows was written whole: the zero-last-byte test applies only to a
    record nothing follows (the end of the walk)."""
    if end + 8 > limit:
        return False
    size, magic = _HEAD.unpack_from(mm, end)
    return magic == BLANK_MAGIC or (magic == MESSAGE_MAGIC and MIN_RECORD_BYTES <= size <= limit - end)


def stop_reason(size: int, magic: int) -> str:
    """Why the walk stops at a record head that is not a message that fits ("BLANK": the end-of-file
    record, the segment ends there)."""
    if magic == BLANK_MAGIC:
        return "BLANK"
    if magic != MESSAGE_MAGIC:
        return "no record magic" if magic == 0 and size == 0 else f"bad magic {magic & 0xFFFFFFFF:#x}"
    return f"size {size} does not fit"


@dataclass(slots=True)
class Chunk:
    """The valid records of one chunk as columns (positions relative to the segment), and where it ends.

    ``next_pos`` is the position after the last valid record; ``reason`` is None when the chunk simply
    filled (walk on), else why the walk stopped at ``next_pos`` ("BLANK" for the end-of-file record).
    ``damaged``: starts of the records among them kept although their body fails its CRC (bit rot, see
    ``SegmentReader.chunk``)."""

    start: np.ndarray
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sys_flag: np.ndarray
    store_timestamp: np.ndarray
    #: position of the TOPICLENGTH byte; the topic follows, then PROPERTIESLENGTH at ``props_at``
    topic_len_at: np.ndarray
    props_at: np.ndarray
    next_pos: int
    reason: str | None
    damaged: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.start)


class SegmentReader:
    """Reads the records of one mapped segment a chunk at a time.  Holds numpy views of the mapping:
    ``close()`` before the mapping is closed (``with`` does it)."""

    def __init__(self, mm: mmap.mmap, limit: int) -> None:
        self.mm = mm
        self.limit = limit
        self.arr = np.frombuffer(mm, dtype=np.uint8)
        self._i4 = unaligned(self.arr, ">i4")
        self._i8 = unaligned(self.arr, ">i8")

    def close(self) -> None:
        del self.arr, self._i4, self._i8

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- 1. the TOTALSIZE chain -------------------------------------------------------------------------

    def walk(self, pos: int, max_records: int) -> tuple[np.ndarray, int, str | None]:
        """Record starts from *pos* (at most *max_records*), where the chain went next, and why it stopped
        there (None: *max_records* reached).  Each start has the message magic and a size that fits."""
        mm = self.mm
        limit = self.limit
        unpack = _HEAD.unpack_from
        pieces: list[np.ndarray] = []
        singles: list[int] = []
        add = singles.append
        count = 0
        same = 0
        last_size = -1
        run_len = _RUN_FIRST
        reason: str | None = None
        while count < max_records:
            if pos + 8 > limit:
                reason = "end of segment"
                break
            size, magic = unpack(mm, pos)
            if magic != MESSAGE_MAGIC or size < MIN_RECORD_BYTES or pos + size > limit:
                reason = stop_reason(size, magic)
                break
            if size != last_size:
                last_size = size
                same = 0
                run_len = _RUN_FIRST
            else:
                same += 1
            if same < _RUN_AFTER:
                add(pos)
                pos += size
                count += 1
                continue
            # a run of equal sizes: check up to run_len candidate heads at pos + j*size in one read
            k = min(run_len, max_records - count, (limit - pos) // size)
            heads = np.ndarray(shape=(k, 2), dtype=">i4", buffer=self.arr, offset=pos, strides=(size, 4))
            ok = (heads[:, 0] == size) & (heads[:, 1] == MESSAGE_MAGIC)
            m = k if ok.all() else int(np.argmin(ok))
            del heads
            if singles:
                pieces.append(np.asarray(singles, dtype=np.int64))
                singles = []
                add = singles.append
            pieces.append(pos + size * np.arange(m, dtype=np.int64))
            pos += size * m
            count += m
            if m == k:
                run_len = min(run_len * 4, 1 << 20)
            else:
                same = 0  # the next head differs: step it one at a time
                run_len = _RUN_FIRST
        if singles:
            pieces.append(np.asarray(singles, dtype=np.int64))
        starts = pieces[0] if len(pieces) == 1 else (np.concatenate(pieces) if pieces
                                                      else np.zeros(0, dtype=np.int64))
        return starts, pos, reason

    # --- 2. lengths and CRC ---------------------------------------------------------------------------

    def chunk(self, pos: int, check_crc: bool, max_records: int = CHUNK_RECORDS,
              keep_bad_crc_until_ms: int | None = None) -> Chunk:
        """Walk and check up to *max_records* records from *pos*; the valid prefix as columns.

        With *keep_bad_crc_until_ms*, a record whose body fails its CRC but whose lengths all hold together
        and whose store timestamp is in (0, keep_bad_crc_until_ms] does not end the chunk: it was written
        whole (the caller knows it was synced: a clean close, or a checkpoint that vouches for that time), so
        the body changed on disk since (bit rot), and the records after it are good.  Its start goes into
        ``Chunk.damaged``; the readers name it as damaged."""
        starts, next_pos, reason = self.walk(pos, max_records)
        arr, i4, i8 = self.arr, self._i4, self._i8
        last4 = len(i4) - 1
        step = int(starts[1] - starts[0]) if len(starts) > 1 else 0
        spaced = bool(step) and not (np.diff(starts) != step).any()
        if spaced:  # SYSFLAG sits at one place in every host family: a strided view, no gather
            sys_flag = np.ndarray((len(starts),), dtype=">i4", buffer=arr,
                                  offset=int(starts[0]) + SYS_FLAG_POS, strides=(step,)).astype(np.int64)
        else:
            sys_flag = i4[starts + SYS_FLAG_POS].astype(np.int64)
        hosts = (sys_flag & 0x30) >> 4
        v6 = bool(hosts.any())
        even = spaced and not v6
        if even:
            # evenly spaced IPv4-host records (a run of one size): the header fields are strided views of
            # the mapping, no gathers (a v4 header fits in any record: MIN_RECORD_BYTES >= its size)
            first = int(starts[0])

            def field(at: int, dtype: str) -> np.ndarray:
                return np.ndarray((len(starts),), dtype=dtype, buffer=arr, offset=first + at,
                                  strides=(step,)).astype(np.int64)
        else:
            def field(at: int, dtype: str) -> np.ndarray:
                return (i4 if dtype == ">i4" else i8)[starts + at].astype(np.int64)
        n = len(starts)
        layout = self._one_layout(int(starts[0]), n, step) if even else None
        if layout is not None:
            # one producer's run: every record has the same layout, checked column-wise in place
            body_length, tl_rel, pl_rel, n = layout
            size = np.full(len(starts), step, dtype=np.int64)
            body_at = starts + (int(_BODY_LEN_POS[0]) + 4)
            topic_len_at = starts + tl_rel
            props_at = starts + pl_rel
            if n < len(starts):
                reason = "record ends in zero bytes (torn write)"
                next_pos = int(starts[n])
        else:
            size = field(0, ">i4")
            ends = starts + size
            if v6:
                body_len_at = starts + _BODY_LEN_POS[hosts]
                # a header longer than its record (an IPv6 layout in a short record) fails the body
                # check below; its BODYLENGTH is read clipped to the mapping, as the one-record check may
                # read past it
                body_len = i4[np.minimum(body_len_at, last4)].astype(np.int64)
            else:
                body_len_at = starts + int(_BODY_LEN_POS[0])
                body_len = field(int(_BODY_LEN_POS[0]), ">i4")
            body_at = body_len_at + 4
            topic_len_at = body_at + body_len
            body_ok = (body_len >= 0) & (topic_len_at + 3 <= ends)
            tl_at = np.where(body_ok, topic_len_at, starts)
            props_at = tl_at + 1 + arr[tl_at]
            lengths_ok = body_ok & (props_at + 2 <= ends)
            pl_at = np.where(lengths_ok, props_at, starts)
            high = arr[pl_at].astype(np.int64)
            # PROPERTIESLENGTH: a signed short
            props_len = (high << 8 | arr[pl_at + 1]) - ((high & 0x80) << 9)
            lengths_ok &= pl_at + 2 + props_len == ends
            valid = lengths_ok
            n = len(starts)
            # a record ending in a zero byte is torn only when nothing follows it (``followed_at``): the
            # walk checked the head after every record but the last
            end = int(ends[-1]) if n else 0
            if n and pl_at[-1] + 2 < end and arr[end - 1] == 0 and not followed_at(self.mm, end, self.limit):
                valid = valid.copy()
                valid[-1] = False
            if not valid.all():
                n = int(np.argmin(valid))
                reason = ("body length does not fit" if not body_ok[n] else
                          "lengths disagree with the record size" if not lengths_ok[n] else
                          "record ends in zero bytes (torn write)")
                next_pos = int(starts[n])
        ts_at = _STORE_TS_POS[(sys_flag & SysFlag.BORNHOST_V6) >> 4] if v6 else int(_STORE_TS_POS[0])
        store_ts = (i8[starts + ts_at].astype(np.int64) if v6
                    else field(ts_at, ">i8"))  # type: ignore[arg-type]
        damaged: tuple[int, ...] = ()
        if check_crc and n:
            want = field(_CRC_POS, ">i4")[:n]
            mv = memoryview(self.mm)
            try:
                crc32 = zlib.crc32
                length = body_length if layout is not None else int(body_len[0])
                if layout is not None or (even and not (body_len[:n] != length).any()):
                    # one body length, evenly spaced: the starts are a range (no lists of positions to
                    # build and zip; ~7 % of this loop, whose floor is the crc32 call itself)
                    a = int(body_at[0])
                    got = [crc32(mv[a : a + length]) for a in range(a, a + n * step, step)]
                else:
                    got = [crc32(mv[a:b]) for a, b in zip(body_at[:n].tolist(), topic_len_at[:n].tolist())]
            finally:
                mv.release()
            bad = np.flatnonzero((np.asarray(got, dtype=np.int64) & 0x7FFFFFFF) != want)
            if len(bad):
                cut = int(bad[0])
                if keep_bad_crc_until_ms is not None:
                    ts = store_ts[bad]
                    kept = (ts > 0) & (ts <= keep_bad_crc_until_ms)
                    cut = -1 if kept.all() else int(bad[int(np.argmin(kept))])
                    damaged = tuple(int(starts[i]) for i in bad.tolist() if cut < 0 or i < cut)
                if cut >= 0:
                    n = cut
                    reason = "body CRC mismatch"
                    next_pos = int(starts[n])
        return Chunk(
            start=starts[:n],
            size=size[:n],
            queue_id=field(_QUEUE_ID_POS, ">i4")[:n],
            queue_offset=field(QUEUE_OFFSET_POS, ">i8")[:n],
            sys_flag=sys_flag[:n],
            store_timestamp=store_ts[:n],
            topic_len_at=topic_len_at[:n],
            props_at=props_at[:n],
            next_pos=next_pos,
            reason=reason,
            damaged=damaged,
        )

    def _one_layout(self, first: int, count: int, step: int) -> tuple[int, int, int, int] | None:
        """For *count* IPv4-host records evenly spaced *step* bytes apart from *first*: when every one is
        *step* bytes long with the same body, topic and properties lengths (one producer's run), (body
        length, TOPICLENGTH and PROPERTIESLENGTH positions within a record, records before the first torn
        one); None otherwise.  The checks of ``chunk`` then hold for all records or none, save the last
        byte, so they are made once, and the columns are compared with strided views of the mapping."""
        arr = self.arr

        def column(at: int, dtype: str) -> np.ndarray:
            return np.ndarray((count,), dtype=dtype, buffer=arr, offset=first + at, strides=(step,))

        if (column(0, ">i4") != step).any():
            return None
        body_len_pos = int(_BODY_LEN_POS[0])
        body_length = int(self._i4[first + body_len_pos])
        tl_rel = body_len_pos + 4 + body_length
        if body_length < 0 or tl_rel + 3 > step or (column(body_len_pos, ">i4") != body_length).any():
            return None
        topic_length = int(arr[first + tl_rel])
        pl_rel = tl_rel + 1 + topic_length
        if pl_rel + 2 > step or (column(tl_rel, "u1") != topic_length).any():
            return None
        props_length = column(pl_rel, ">i2")
        if pl_rel + 2 + int(props_length[0]) != step or (props_length != props_length[0]).any():
            return None
        valid = count
        end = first + count * step
        # a record whose properties are not empty ends in a zero byte: torn only when it is the last and
        # nothing follows it (``followed_at``; the walk checked the head after every other one)
        if pl_rel + 2 < step and arr[end - 1] == 0 and not followed_at(self.mm, end, self.limit):
            valid = count - 1
        return body_length, tl_rel, pl_rel, valid

    # --- 3. topics --------------------------------------------------------------------------------------

    def topic_ids(self, chunk: Chunk, topics: dict[bytes, int], names: list[str | None]) -> np.ndarray:
        """The topic of each record as an index into *names* (grown as new topics appear; None for a name
        that is not UTF-8).  Records are compared a distinct topic at a time, all of them at once."""
        n = len(chunk)
        ids = np.full(n, -1, dtype=np.int64)
        if not n:
            return ids
        arr = self.arr
        a = chunk.topic_len_at + 1
        length = chunk.props_at - a
        todo = np.arange(n, dtype=np.int64)
        even = n > 1 and a[1] > a[0] and not (np.diff(a) != a[1] - a[0]).any()
        for _ in range(8):
            first = int(todo[0])
            lo = int(a[first])
            raw = self.mm[lo : lo + int(length[first])]
            tid = topics.get(raw)
            if tid is None:
                try:
                    name: str | None = raw.decode("utf-8")
                except UnicodeDecodeError:
                    name = None
                tid = topics[raw] = len(names)
                names.append(name)
            cand = todo[length[todo] == len(raw)]
            if len(raw):
                if len(cand) == n and even:  # every record, evenly spaced: compare in place
                    cells = np.ndarray((n, len(raw)), dtype=np.uint8, buffer=arr, offset=int(a[0]),
                                       strides=(int(a[1] - a[0]), 1))
                else:
                    cells = arr[a[cand][:, None] + np.arange(len(raw), dtype=np.int64)]
                same = cells == np.frombuffer(raw, dtype=np.uint8)
                del cells
                if not same.all():  # (a reduction along short rows costs ~20x one over the whole matrix)
                    cand = cand[same.all(axis=1)]
            ids[cand] = tid
            todo = todo[ids[todo] < 0]
            if not len(todo):
                return ids
        mm = self.mm
        for i in todo.tolist():  # many topics in one chunk: one look-up each
            lo = int(a[i])
            raw = mm[lo : lo + int(length[i])]
            tid = topics.get(raw)
            if tid is None:
                try:
                    name = raw.decode("utf-8")
                except UnicodeDecodeError:
                    name = None
                tid = topics[raw] = len(names)
                names.append(name)
            ids[i] = tid
        return ids


# --- 4. properties of one producer's records ----------------------------------------------------------


_MASK32 = np.uint64(0xFFFFFFFF)
_POWERS: dict[int, np.ndarray] = {}


def _powers(length: int) -> np.ndarray:
    """31**(length-1-j) mod 2**64 for j in 0..length-1: a row of bytes times this is Java's hashCode."""
    p = _POWERS.get(length)
    if p is None:
        p = np.empty(length, dtype=np.uint64)
        acc = 1
        for j in range(length - 1, -1, -1):
            p[j] = acc
            acc = (acc * 31) & 0xFFFFFFFFFFFFFFFF
        if len(_POWERS) < 1024:
            _POWERS[length] = p
    return p


_HALVES: dict[int, np.ndarray] = {}


def _power_halves(length: int) -> np.ndarray:
    """``_powers(length)`` mod 2**32 as a (length, 2) float64 matrix: low 16 bits, high 16 bits."""
    m = _HALVES.get(length)
    if m is None:
        p = _powers(length) & _MASK32
        m = np.stack([p & np.uint64(0xFFFF), p >> np.uint64(16)], axis=1).astype(np.float64)
        if len(_HALVES) < 1024:
            _HALVES[length] = m
    return m


class UniformProperties:
    """The properties strings of n records when all have one length and their separators and names sit at
    the same places (what one producer's messages carry: fixed-width keys, one tag): every property's value
    is then a column range of an n x length byte matrix, read in place where the records are evenly spaced,
    and its Java hash is one matrix product.  ``build`` returns None for anything else (the caller parses
    with ``rebuild_props.ChunkProperties``, which handles every shape); both give the same answers.

    Same interface as ``ChunkProperties``: ``non_ascii``, ``tags_codes()``, ``key_hashes()``.
    """

    def __init__(self, rows: np.ndarray, pairs: dict[bytes, tuple[int, int]], non_ascii: np.ndarray) -> None:
        self.rows = rows
        self.pairs = pairs
        self.non_ascii = non_ascii
        self.n = len(rows)

    @classmethod
    def build(cls, arr: np.ndarray, starts: np.ndarray, length: int) -> UniformProperties | None:
        """For the strings ``arr[starts[i] : starts[i] + length]``, or None when they are not uniform."""
        n = len(starts)
        if n < 2 or length <= 0:
            return None
        step = int(starts[1] - starts[0])
        if step >= length and bool((np.diff(starts) == step).all()):
            rows = np.ndarray((n, length), dtype=np.uint8, buffer=arr, offset=int(starts[0]), strides=(step, 1))
        else:
            rows = arr[starts[:, None] + np.arange(length, dtype=np.int64)]
        first = rows[0]
        # row 0 parsed as parse_properties does: items cut at 0x02, a pair needs a non-empty name and value
        pairs: dict[bytes, tuple[int, int]] = {}
        pos = 0
        for item in first.tobytes().split(b"\x02"):
            sep = item.find(b"\x01")
            if 0 < sep < len(item) - 1:
                name = item[:sep]
                if name in pairs:
                    return None  # a repeated name: the general parser applies "the last one wins"
                pairs[name] = (pos + sep + 1, pos + len(item))
            pos += len(item) + 1
        # Every other row must parse the same way: the bytes outside the values (names, separators, items
        # that are no pair) equal row 0's, and no value holds a separator.  Then only values differ.  All
        # rows as one flat run of bytes against row patterns repeated n times (an operation broadcasting a
        # row over the matrix costs numpy a loop per row, ~5x slower).
        in_value = np.zeros(length, dtype=bool)
        for a, b in pairs.values():
            in_value[a:b] = True
        rows = np.ascontiguousarray(rows)
        flat = rows.reshape(-1)

        def tiled(row: np.ndarray) -> np.ndarray:
            return np.frombuffer(row.astype(np.uint8).tobytes() * n, dtype=np.uint8)

        # in place on one scratch copy (a second temporary of this size costs more in page faults than
        # the arithmetic): outside values, the byte masked with 0xFF must be row 0's (xor gives 0); inside,
        # masked with 0, it is 0 anyway
        work = np.bitwise_and(flat, tiled(np.where(in_value, 0, 0xFF)))
        np.bitwise_xor(work, tiled(np.where(in_value, 0, first)), out=work)
        if work.any():
            return None
        # inside values no byte is 1 or 2 (a separator: byte - 1 in {0, 1}); outside, bytes get the high bit
        np.bitwise_or(flat, tiled(np.where(in_value, 0, 0x80)), out=work)
        np.subtract(work, np.uint8(1), out=work)
        np.bitwise_and(work, np.uint8(0xFE), out=work)
        if not work.all():
            return None
        keys = pairs.get(b"KEYS")
        if keys is not None and (rows[:, keys[0] : keys[1]] == 0x20).any():
            return None  # several keys in KEYS: tokens of varying place
        # per-row answers only when some byte is non-ASCII (a reduction along short rows is ~20x slower)
        np.bitwise_and(flat, np.uint8(0x80), out=work)
        non_ascii = np.asarray((rows >= 0x80).any(axis=1)) if work.any() else np.zeros(n, dtype=bool)
        return cls(rows, pairs, non_ascii)

    def _hash(self, name: bytes, start: np.ndarray | None = None) -> np.ndarray | None:
        """Java hashCode state (uint64, low 32 bits) of the value of *name* in every row, continuing from
        *start* states; None when the property is absent."""
        got = self.pairs.get(name)
        if got is None:
            return None
        a, b = got
        # The sum of byte * 31**k mod 2**32, from two float64 products (BLAS) with the low and high 16 bits
        # of each power: every partial sum stays below 2**53, so both are exact; an integer matrix product
        # has no BLAS and costs ~4x as much.
        halves = _power_halves(b - a)
        sums = (self.rows[:, a:b].astype(np.float64) @ halves).astype(np.uint64)
        h = sums[:, 1] << np.uint64(16)
        h += sums[:, 0]
        with np.errstate(over="ignore"):
            if start is not None:
                h += start * _powers(b - a + 1)[0]
        h &= _MASK32
        return h

    def present(self, name: str) -> np.ndarray:
        """Rows carrying a non-empty *name* property: every row or none (all rows have row 0's pairs, each
        with a non-empty value)."""
        return np.full(self.n, name.encode() in self.pairs, dtype=bool)

    def tags_codes(self) -> np.ndarray:
        h = self._hash(b"TAGS")
        return np.zeros(self.n, dtype=np.int64) if h is None else as_int32(h)

    def key_hashes(self, topic_ids: np.ndarray, topic_names: list[str],
                   indexed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(record, index key hash) of every key in dispatch order: UNIQ_KEY, then KEYS."""
        prefix = np.array([java_string_hash(t + "#") & 0xFFFFFFFF for t in topic_names] + [0], dtype=np.uint64)
        start = prefix[topic_ids]
        cols = [h for h in (self._hash(b"UNIQ_KEY", start), self._hash(b"KEYS", start)) if h is not None]
        rec = np.flatnonzero(indexed)
        if not cols or not len(rec):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        hashes = np.stack([fold_key_hash(h[rec]) for h in cols], axis=1).ravel()
        return np.repeat(rec, len(cols)).astype(np.int64), hashes.astype(np.int64)


#: records of one properties length worth a byte matrix of their own (fewer go to the general parser)
_UNIFORM_MIN_RECORDS = 32


class GroupedProperties:
    """The properties of a chunk's records, parsed by groups of one properties length: a group whose
    records share one shape (one producer: same names, same value lengths) is a ``UniformProperties`` byte
    matrix, every other record goes to one ``ChunkProperties``.  Keys that grow a digit, or a few producers
    in turn, still get the matrix.  Answers are per record of the chunk, in its order, the same as one
    ``ChunkProperties`` over the whole chunk gives."""

    def __init__(self, arr: np.ndarray, text_at: np.ndarray, ends: np.ndarray) -> None:
        self.n = n = len(text_at)
        text_len = ends - text_at
        #: (record numbers within the chunk, ascending, or None for all of them; their parser)
        self.parts: list[tuple[np.ndarray | None, UniformProperties | ChunkProperties]] = []
        if n and not (text_len != text_len[0]).any():
            uniform = UniformProperties.build(arr, text_at, int(text_len[0]))
            self.parts.append((None, uniform if uniform is not None else ChunkProperties(arr, text_at, ends)))
        elif n:
            order = np.argsort(text_len, kind="stable")  # stable: record numbers ascend within a length
            rest: list[np.ndarray] = []
            for idx in np.split(order, np.flatnonzero(np.diff(text_len[order])) + 1):
                uniform = None
                if len(idx) >= _UNIFORM_MIN_RECORDS:
                    uniform = UniformProperties.build(arr, text_at[idx], int(text_len[idx[0]]))
                if uniform is not None:
                    self.parts.append((idx, uniform))
                else:
                    rest.append(idx)
            if rest:
                idx = np.sort(np.concatenate(rest))
                self.parts.append((idx, ChunkProperties(arr, text_at[idx], ends[idx])))
        self.non_ascii = self._scatter([p.non_ascii for _, p in self.parts], bool)

    @property
    def whole(self) -> UniformProperties | ChunkProperties | None:
        """The one parser of every record, when there is one."""
        return self.parts[0][1] if len(self.parts) == 1 and self.parts[0][0] is None else None

    def _scatter(self, values: list[np.ndarray], dtype: type) -> np.ndarray:
        if self.whole is not None:
            return np.asarray(values[0], dtype=dtype)
        out: np.ndarray = np.zeros(self.n, dtype=dtype)
        for (idx, _), v in zip(self.parts, values):
            out[idx] = v
        return out

    def present(self, name: str) -> np.ndarray:
        """Records carrying a non-empty *name* property (``parse_properties`` drops empty values)."""
        return self._scatter([p.present(name) for _, p in self.parts], bool)

    def tags_codes(self) -> np.ndarray:
        return self._scatter([p.tags_codes() for _, p in self.parts], np.int64)

    def key_hashes(self, topic_ids: np.ndarray, topic_names: list[str],
                   indexed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(record, folded hash) of every index key in dispatch order: by record, UNIQ_KEY then KEYS."""
        whole = self.whole
        if whole is not None:
            return whole.key_hashes(topic_ids, topic_names, indexed)
        recs: list[np.ndarray] = [np.zeros(0, np.int64)]
        hashes: list[np.ndarray] = [np.zeros(0, np.int64)]
        for idx, p in self.parts:
            assert idx is not None
            rec, h = p.key_hashes(topic_ids[idx], topic_names, indexed[idx])
            recs.append(idx[rec])
            hashes.append(h)
        rec = np.concatenate(recs)
        order = np.argsort(rec, kind="stable")  # a record is in one group: its own keys stay in order
        return rec[order].astype(np.int64), np.concatenate(hashes)[order].astype(np.int64)
