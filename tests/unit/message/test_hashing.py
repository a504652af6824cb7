"""Java String.hashCode, tagsCode and index key hashes, checked against known Java values."""

from __future__ import annotations

import pytest

from rocketstore.message.hashing import index_key_hash, index_key_hash_for_topic, java_string_hash, tags_code

INT_MIN = -(2**31)


def reference_hash(text: str) -> int:
    """Independent reference: fold the UTF-16 code units with 31, wrap to a signed 32-bit int."""
    raw = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(raw), 2):
        h = (h * 31 + int.from_bytes(raw[i : i + 2], "big")) % 2**32
    return h - 2**32 if h >= 2**31 else h


def suffix_for_hash(prefix: str, target: int) -> str:
    """Seven printable characters that make ``prefix + suffix`` hash to *target* (a signed int).

    hash(prefix + s) = hash(prefix) * 31^7 + sum(s[i] * 31^(6-i)) mod 2^32.  Writing s[i] = 'A' + d[i]
    with digits d in [0, 31) turns this into a base-31 representation of a residue below 2^32 < 31^7.
    """
    n = 7
    h = reference_hash(prefix) % 2**32
    need = (target - h * 31**n - sum(ord("A") * 31 ** (n - 1 - i) for i in range(n))) % 2**32
    digits = []
    for _ in range(n):
        need, d = divmod(need, 31)
        digits.append(d)
    assert need == 0
    return "".join(chr(ord("A") + d) for d in reversed(digits))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TagA", 2598919),
        ("TagB", 2598920),
        ("*", 42),
        ("null", 3392903),
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("polygenelubricants", INT_MIN),
    ],
)
def test_java_string_hash_matches_known_java_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_string_hash_wraps_to_a_signed_32_bit_int() -> None:
    text = "the quick brown fox jumps over the lazy dog" * 7
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31
    assert h == reference_hash(text)


def test_java_string_hash_counts_a_non_bmp_character_as_a_surrogate_pair() -> None:
    # U+1F600 is the UTF-16 pair D83D DE00: hash = 0xD83D * 31 + 0xDE00
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00 == 1772899
    assert java_string_hash("a\U0001F600b") == reference_hash("a\U0001F600b")
    assert java_string_hash("\U0001F600") != java_string_hash("\uF600")


@pytest.mark.parametrize("text", ["\u00e9t\u00e9", "\u4e2d\u6587\u6807\u7b7e", "\U00010348\U0001F680x", "\uffff\x00"])
def test_java_string_hash_agrees_with_a_utf16_reference(text: str) -> None:
    assert java_string_hash(text) == reference_hash(text)


def test_tags_code_is_the_signed_hash_of_tags_or_zero_without_tags() -> None:
    assert tags_code("TagA") == 2598919
    assert tags_code("*") == 42
    assert tags_code(None) == 0
    assert tags_code("") == 0
    # negative hashes stay negative (sign-extended to the 64-bit consume-queue field)
    assert tags_code("polygenelubricants") == INT_MIN
    negative = "ORDER_CREATED"
    assert reference_hash(negative) < 0
    assert tags_code(negative) == reference_hash(negative)


def test_index_key_hash_is_abs_of_the_hash_of_topic_hash_key() -> None:
    for topic, key in [("TopicTest", "order-1"), ("%RETRY%grp", "k"), ("T", "\U0001F600")]:
        expected = abs(reference_hash(f"{topic}#{key}"))
        assert index_key_hash(topic, key) == expected
        assert index_key_hash_for_topic(topic, key) == expected


def test_index_key_hash_makes_a_negative_hash_positive() -> None:
    key = suffix_for_hash("TopicTest#", -12345)
    assert reference_hash("TopicTest#" + key) == -12345
    assert index_key_hash("TopicTest", key) == 12345
    assert index_key_hash_for_topic("TopicTest", key) == 12345


def test_index_key_hash_maps_integer_min_value_to_zero() -> None:
    key = suffix_for_hash("TopicTest#", INT_MIN)
    assert java_string_hash("TopicTest#" + key) == INT_MIN
    assert index_key_hash("TopicTest", key) == 0
    assert index_key_hash_for_topic("TopicTest", key) == 0


def test_index_key_hash_for_topic_cache_does_not_leak_between_topics() -> None:
    assert index_key_hash_for_topic("A", "k") == abs(reference_hash("A#k"))
    assert index_key_hash_for_topic("B", "k") == abs(reference_hash("B#k"))
    assert index_key_hash_for_topic("A", "k") == abs(reference_hash("A#k"))


@pytest.mark.parametrize("length", [1, 2, 9, 32, 127, 3999, 4000, 4001, 9000])
def test_ascii_hash_by_base31_numerals_equals_the_utf16_reference_at_every_length(length: int) -> None:
    """ASCII strings are hashed by reading two base-31 numerals (up to int()'s digit limit), longer ones
    character by character: both must agree with the reference, for every byte value 0..127."""
    import random

    rng = random.Random(length)
    text = "".join(chr(rng.randrange(128)) for _ in range(length))
    text = (text + "\x00\x7f~ ")[:length]
    assert java_string_hash(text) == reference_hash(text)
    assert index_key_hash("T", text) == abs(reference_hash("T#" + text)) % 2**31


def test_index_key_hash_with_prefix_equals_index_key_hash() -> None:
    from rocketstore.message.hashing import index_key_hash_with_prefix, index_key_prefix

    for topic, key in (("TopicA", "k1"), ("T", ""), ("\u4e2d", "\U0001F600x"), ("T", "polygenelubricants")):
        assert index_key_hash_with_prefix(index_key_prefix(topic), key) == index_key_hash(topic, key)
