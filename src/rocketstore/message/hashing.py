"""Java-compatible string hashing: the tagsCode of a consume-queue entry and the key hash of an index entry.

RocketMQ hashes with Java's ``String.hashCode``: a polynomial in 31 over the UTF-16 code units, wrapped to a
signed 32-bit int.  Python strings are code points, so characters outside the BMP count as two units
(a surrogate pair), exactly as Java sees them.

Imports nothing from the rest of the package.
"""

from __future__ import annotations

__all__ = ["index_key_hash", "index_key_hash_for_topic", "index_key_hash_with_prefix",
           "index_key_prefix", "java_string_hash", "tags_code"]

_MASK32 = 0xFFFFFFFF


# An ASCII string's hash without a Python step per character.  Its exact polynomial
# sum(c[i] * 31**(n-1-i)) is a number written in base 31 with "digits" c[i] up to 127; splitting each
# c[i] into c[i] % 31 + 31 * (c[i] // 31) turns it into two proper base-31 numerals, which bytes.translate
# writes and int(..., 31) reads, both in C.  Measured ~4x faster than the loop for a 32-character
# UNIQ_KEY, ~1.8x for a 9-character key.
_DIGITS31 = b"0123456789abcdefghijklmnopqrstu"
_LOW_DIGIT = bytes(_DIGITS31[c % 31] for c in range(128)) + bytes(128)
_HIGH_DIGIT = bytes(_DIGITS31[c // 31] for c in range(128)) + bytes(128)
#: int() refuses longer numerals in a non-power-of-two base (sys.int_info.str_digits_check_threshold)
_NUMERAL_MAX = 4000
_POW31: list[int] = [1]
for _ in range(_NUMERAL_MAX):
    _POW31.append((_POW31[-1] * 31) & _MASK32)


def _hash_utf16_units(text: str, start: int = 0) -> int:
    h = start
    if text.isascii() and 0 < len(text) <= _NUMERAL_MAX:
        raw = text.encode()
        return (h * _POW31[len(raw)] + int(raw.translate(_LOW_DIGIT), 31)
                + 31 * int(raw.translate(_HIGH_DIGIT), 31)) & _MASK32
    for ch in text:
        c = ord(ch)
        if c < 0x10000:
            h = (h * 31 + c) & _MASK32
        else:
            c -= 0x10000
            h = (h * 31 + (0xD800 | (c >> 10))) & _MASK32
            h = (h * 31 + (0xDC00 | (c & 0x3FF))) & _MASK32
    return h


def _to_int32(h: int) -> int:
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash(text: str) -> int:
    """``String.hashCode`` of *text* as a signed 32-bit int."""
    return _to_int32(_hash_utf16_units(text))


# Tags repeat across messages; the cache keeps the hot path to one dict lookup.  Bounded so a stream of
# unique tags cannot grow it without limit.
_TAGS_CACHE: dict[str, int] = {}
_TAGS_CACHE_MAX = 65536


def tags_code(tags: str | None) -> int:
    """The consume-queue tagsCode of a message with TAGS = *tags* (0 when absent or empty)."""
    if not tags:
        return 0
    code = _TAGS_CACHE.get(tags)
    if code is None:
        code = java_string_hash(tags)
        if len(_TAGS_CACHE) >= _TAGS_CACHE_MAX:
            _TAGS_CACHE.clear()
        _TAGS_CACHE[tags] = code
    return code


def _fold_key_hash(h32: int) -> int:
    # abs() of a Java int; Integer.MIN_VALUE stays negative in Java and is then mapped to 0.
    signed = _to_int32(h32)
    if signed == -0x80000000:
        return 0
    return -signed if signed < 0 else signed


def index_key_hash(topic: str, key: str) -> int:
    """Index-file key hash of ``topic#key``: abs(String.hashCode), with Integer.MIN_VALUE mapped to 0."""
    return _fold_key_hash(_hash_utf16_units(key, _hash_utf16_units(topic + "#")))


_TOPIC_PREFIX_CACHE: dict[str, int] = {}


def index_key_prefix(topic: str) -> int:
    """The unsigned 32-bit hash state after ``topic#``: the hash of ``topic#key`` is this state times
    31**(UTF-16 length of key) plus the hash of *key*, mod 2**32 (which lets a vectorised hasher hash only
    the keys).  Cached per topic."""
    prefix = _TOPIC_PREFIX_CACHE.get(topic)
    if prefix is None:
        prefix = _hash_utf16_units(topic + "#")
        if len(_TOPIC_PREFIX_CACHE) >= _TAGS_CACHE_MAX:
            _TOPIC_PREFIX_CACHE.clear()
        _TOPIC_PREFIX_CACHE[topic] = prefix
    return prefix


def index_key_hash_with_prefix(prefix: int, key: str) -> int:
    """:func:`index_key_hash` of ``topic#key`` from the topic's :func:`index_key_prefix` state."""
    return _fold_key_hash(_hash_utf16_units(key, prefix))


def index_key_hash_for_topic(topic: str, key: str) -> int:
    """Same as :func:`index_key_hash`, with the ``topic#`` prefix state cached per topic (dispatch hot path)."""
    prefix = _TOPIC_PREFIX_CACHE.get(topic)
    if prefix is None:
        prefix = index_key_prefix(topic)
    return _fold_key_hash(_hash_utf16_units(key, prefix))
