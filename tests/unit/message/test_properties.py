"""The properties string: Java's parse rules and the Java HashMap iteration order of the writer."""

from __future__ import annotations

import pytest

from rocketstore.message.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    PeakProperties,
    PropertyName,
    encode_properties,
    parse_properties,
    parse_properties_raw,
)

S1 = NAME_VALUE_SEPARATOR
S2 = PROPERTY_SEPARATOR


def test_separators_are_char_1_and_char_2() -> None:
    assert S1 == "\x01"
    assert S2 == "\x02"


# --- parsing ------------------------------------------------------------------------------------------


def test_parse_splits_pairs_on_char_2_and_names_from_values_on_char_1() -> None:
    assert parse_properties("TAGS\x01TagA\x02KEYS\x01k1 k2") == {"TAGS": "TagA", "KEYS": "k1 k2"}


def test_parse_of_empty_text_is_empty() -> None:
    assert parse_properties("") == {}


def test_parse_drops_pairs_with_an_empty_value() -> None:
    assert parse_properties("A\x01\x02B\x01b") == {"B": "b"}


def test_parse_drops_pairs_with_an_empty_name() -> None:
    assert parse_properties("\x01v\x02B\x01b") == {"B": "b"}


def test_parse_drops_segments_without_a_name_value_separator() -> None:
    assert parse_properties("garbage\x02B\x01b\x02x") == {"B": "b"}


def test_parse_ignores_a_trailing_pair_separator() -> None:
    # C++ and ali-ons writers end every pair with \x02
    assert parse_properties("TAGS\x01TagA\x02KEYS\x01k\x02") == {"TAGS": "TagA", "KEYS": "k"}


def test_parse_ignores_empty_segments() -> None:
    assert parse_properties("\x02\x02A\x01a\x02\x02") == {"A": "a"}


def test_parse_lets_later_duplicates_win() -> None:
    assert parse_properties("A\x01first\x02B\x01b\x02A\x01second") == {"A": "second", "B": "b"}


def test_parse_splits_a_pair_at_its_first_name_value_separator() -> None:
    assert parse_properties("A\x01b\x01c") == {"A": "b\x01c"}


def test_parse_keeps_one_character_names_and_values() -> None:
    assert parse_properties("a\x01b") == {"a": "b"}


def test_parse_raw_keeps_empty_values_but_not_empty_names() -> None:
    assert parse_properties_raw("A\x01\x02\x01v\x02B\x01b") == {"A": "", "B": "b"}


def test_ali_ons_literal_null_tags_survive_parsing() -> None:
    assert parse_properties("TAGS\x01null")[PropertyName.TAGS] == "null"


# --- writing --------------------------------------------------------------------------------------------


class JavaHashMapModel:
    """A tiny independent model of java.util.HashMap iteration order: buckets of insertion-ordered
    entries, table doubled when size exceeds 3/4 of it (entries re-bucketed in iteration order)."""

    def __init__(self) -> None:
        self.table: list[list[str]] = [[] for _ in range(16)]
        self.size = 0

    @staticmethod
    def _spread(name: str) -> int:
        raw = name.encode("utf-16-be", "surrogatepass")
        h = 0
        for i in range(0, len(raw), 2):
            h = (h * 31 + int.from_bytes(raw[i : i + 2], "big")) % 2**32
        return h ^ (h >> 16)

    def put(self, name: str) -> None:
        bucket = self.table[self._spread(name) % len(self.table)]
        if name in bucket:
            return
        bucket.append(name)
        self.size += 1
        if self.size > len(self.table) * 3 // 4:
            old = [n for b in self.table for n in b]
            self.table = [[] for _ in range(len(self.table) * 2)]
            for n in old:
                self.table[self._spread(n) % len(self.table)].append(n)

    def remove(self, name: str) -> None:
        for bucket in self.table:
            if name in bucket:
                bucket.remove(name)
                self.size -= 1

    def order(self) -> list[str]:
        return [n for b in self.table for n in b]


def names_of(text: str) -> list[str]:
    return [item.split(S1, 1)[0] for item in text.split(S2)] if text else []


def test_encode_writes_the_order_a_java_broker_logs_for_a_consumed_message() -> None:
    # MessageExt.toString of a consumed message commonly prints
    # {MIN_OFFSET=0, MAX_OFFSET=1, KEYS=.., CONSUME_START_TIME=.., UNIQ_KEY=.., CLUSTER=.., WAIT=true, TAGS=TagA}
    props = {"TAGS": "TagA", "KEYS": "k", "WAIT": "true", "UNIQ_KEY": "U", "CLUSTER": "DefaultCluster",
             "MIN_OFFSET": "0", "MAX_OFFSET": "1", "CONSUME_START_TIME": "5"}
    assert names_of(encode_properties(props)) == [
        "MIN_OFFSET", "MAX_OFFSET", "KEYS", "CONSUME_START_TIME", "UNIQ_KEY", "CLUSTER", "WAIT", "TAGS"]


def test_encode_keeps_insertion_order_within_one_bucket() -> None:
    # CLUSTER and UNIQ_KEY share bucket 12 of a 16-bucket table
    assert names_of(encode_properties({"CLUSTER": "c", "UNIQ_KEY": "u"})) == ["CLUSTER", "UNIQ_KEY"]
    assert names_of(encode_properties({"UNIQ_KEY": "u", "CLUSTER": "c"})) == ["UNIQ_KEY", "CLUSTER"]


def test_encode_exact_bytes_for_tags_and_keys() -> None:
    assert encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"}) == "KEYS\x01k1 k2\x02TAGS\x01TagA"


@pytest.mark.parametrize("count", [1, 5, 12, 13, 24, 25, 40, 100])
def test_encode_follows_java_hashmap_order_across_resizes(count: int) -> None:
    names = [f"prop{i}" for i in range(count)] + ["TAGS", "KEYS", "UNIQ_KEY"]
    model = JavaHashMapModel()
    for n in names:
        model.put(n)
    text = encode_properties({n: "v" for n in names})
    assert names_of(text) == model.order()


def test_encode_writes_no_trailing_separator() -> None:
    text = encode_properties({"A": "a", "B": "b"})
    assert not text.endswith(S2)
    assert text.count(S2) == 1


def test_encode_skips_none_values() -> None:
    assert encode_properties({"A": None, "B": "b"}) == "B\x01b"


def test_encode_of_no_properties_is_empty() -> None:
    assert encode_properties({}) == ""


def test_encode_then_parse_round_trips_non_empty_pairs() -> None:
    props = {"TAGS": "TagA", "KEYS": "a b c", "UNIQ_KEY": "0A00000100002A9F0000000000001234",
             "user.prop": "\u00e9\U0001F600", "DELAY": "3"}
    assert parse_properties(encode_properties(props)) == props


@pytest.mark.parametrize("count", [11, 12, 13, 23, 24, 47, 48])
def test_a_map_that_held_more_entries_iterates_in_its_bigger_table(count: int) -> None:
    """PeakProperties: Java's table never shrinks, so a map that held one entry more (the broker adds
    CLUSTER before it drops WAIT) iterates in the table that entry made it grow to."""
    names = [f"p{i}" for i in range(count)]
    model = JavaHashMapModel()
    for n in names + ["WAIT"]:
        model.put(n)
    model.remove("WAIT")
    props = {n: "v" for n in names}
    text = encode_properties(PeakProperties(props, count + 1))
    assert names_of(text) == model.order()
    assert names_of(encode_properties(PeakProperties.after_removal(props, count + 1))) == model.order()
