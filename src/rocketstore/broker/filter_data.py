"""A group's SQL92 filter data as 4.9.3's broker keeps it (ConsumerFilterData) and shows it: QUERY_CONSUME_QUEUE's
filterData is its fastjson text, pretty printed (``JSON.toJSONString(filterData, true)``).

4.9.3 keeps one per group and topic subscribed with an expression that is not TAG and compiles: the group,
the topic, the expression and its type, when it was first registered (bornTime), the subscription's version
(clientVersion), deadTime (0 while the group subscribes) and ``dead`` (deadTime >= bornTime), and the bloom
filter bits of ``<group>#<topic>`` (bloomFilterData: bitPos, bitNum).  Its bloom filter has
k = ceil(log_0.5(f / 100)) hash functions over m = n * log2(100 / f) * log2(e) bits rounded up to whole bytes
(f = maxErrorRateOfBloomFilter, n = expectConsumerNumUseFilter; 20 and 32 by default: 3 positions of 112
bits), the positions taken from the first 64 bits of MurmurHash3 x64 128 (seed 0) of the UTF-8 key as
Guava's Hashing.murmur3_128 computes them.
"""

from __future__ import annotations

import json
import math
import struct

__all__ = ["bloom_bits", "filter_data_text", "murmur3_128_low64"]

_MASK64 = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK64
    return k ^ (k >> 33)


def murmur3_128_low64(data: bytes) -> int:
    """The first 8 bytes (little endian, signed) of MurmurHash3 x64 128 of *data* with seed 0: Guava's
    ``Hashing.murmur3_128().hashBytes(data).asLong()``."""
    h1 = h2 = 0
    length = len(data)
    whole = length - length % 16
    for i in range(0, whole, 16):
        k1, k2 = struct.unpack_from("<QQ", data, i)
        h1 ^= _rotl((k1 * _C1) & _MASK64, 31) * _C2 & _MASK64
        h1 = (_rotl(h1, 27) + h2) & _MASK64
        h1 = (h1 * 5 + 0x52DCE729) & _MASK64
        h2 ^= _rotl((k2 * _C2) & _MASK64, 33) * _C1 & _MASK64
        h2 = (_rotl(h2, 31) + h1) & _MASK64
        h2 = (h2 * 5 + 0x38495AB5) & _MASK64
    tail = data[whole:]
    k1 = int.from_bytes(tail[:8], "little") if tail else 0
    k2 = int.from_bytes(tail[8:], "little") if len(tail) > 8 else 0
    if k2:
        h2 ^= _rotl((k2 * _C2) & _MASK64, 33) * _C1 & _MASK64
    if tail:
        h1 ^= _rotl((k1 * _C1) & _MASK64, 31) * _C2 & _MASK64
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = (h1 + h2) & _MASK64
    return h1 - (1 << 64) if h1 >> 63 else h1


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def bloom_bit_count(error_rate_percent: int = 20, expected_count: int = 32) -> int:
    """The bit count of 4.9.3's consumer bloom filter (BloomFilter's m, a multiple of 8): 112 by default,
    which 4.9.3 also makes its bitMapLengthConsumeQueueExt at start."""
    error_rate = error_rate_percent / 100.0
    m = math.ceil(expected_count * (math.log(1 / error_rate) / math.log(2)) * (math.log(math.e) / math.log(2)))
    return 8 * math.ceil(m / 8.0)


def bloom_bits(key: str, error_rate_percent: int = 20, expected_count: int = 32) -> tuple[list[int], int]:
    """(bit positions, bit count) of *key* in 4.9.3's consumer bloom filter (BloomFilter.generate)."""
    error_rate = error_rate_percent / 100.0
    k = math.ceil(math.log(error_rate) / math.log(0.5))
    m = bloom_bit_count(error_rate_percent, expected_count)
    hash64 = murmur3_128_low64(key.encode("utf-8"))
    hash1, hash2 = _int32(hash64), _int32((hash64 & _MASK64) >> 32)
    positions = []
    for i in range(1, k + 1):
        combined = _int32(hash1 + i * hash2)
        if combined < 0:
            combined = ~combined
        positions.append(combined % m)
    return positions, m


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def filter_data_text(group: str, topic: str, expression: str, expression_type: str, born_ms: int,
                     client_version: int, bloom: tuple[list[int], int]) -> str:
    """A live ConsumerFilterData as fastjson's pretty text: fields by name, a tab per level, no space after
    a colon, the int array on one line."""
    positions, bit_count = bloom
    lines = [
        '\t"bloomFilterData":{',
        f'\t\t"bitNum":{bit_count},',
        f'\t\t"bitPos":[{",".join(str(p) for p in positions)}]',
        "\t},",
        f'\t"bornTime":{born_ms},',
        f'\t"clientVersion":{client_version},',
        f'\t"consumerGroup":{_text(group)},',
        '\t"dead":false,',
        '\t"deadTime":0,',
        f'\t"expression":{_text(expression)},',
        f'\t"expressionType":{_text(expression_type)},',
        f'\t"topic":{_text(topic)}',
    ]
    return "{\n" + "\n".join(lines) + "\n}"
