"""Tag expressions parsed as 4.9.3's FilterAPI.buildSubscriptionData does: each tag cut with String.trim
(only characters up to U+0020 come off), not str.strip.  Vectors from running 4.9.3's FilterAPI."""

from __future__ import annotations

import pytest

from rocketstore.remoting.bodies import SubscriptionData, build_subscription

# expression -> (tagsSet, codeSet) as 4.9.3 builds them
JAVA_VECTORS = [
    ("TagA\u3000", {"TagA\u3000"}, {80578777}),
    ("TagA\xa0||TagB", {"TagA\xa0", "TagB"}, {2598920, 80566649}),
    ("\x01TagA||\x1fTagB\x02", {"TagA", "TagB"}, {2598919, 2598920}),
    ("\t\u3000", {"\u3000"}, {12288}),
    ("\u3000", {"\u3000"}, {12288}),
    ("a||\x85", {"a", "\x85"}, {97, 133}),
]


@pytest.mark.parametrize(("expression", "tags", "codes"), JAVA_VECTORS)
def test_tags_are_cut_with_java_trim(expression: str, tags: set[str], codes: set[int]) -> None:
    sub = build_subscription("T", expression)
    assert not sub.matches_all
    assert set(sub.tags_set) == tags
    assert set(sub.code_set) == codes
    assert sub.tag_codes() == frozenset(codes)


def test_subscription_to_a_tag_ending_in_an_ideographic_space_gets_its_messages() -> None:
    # a producer's tag "TagA\u3000" is stored with the hash of exactly that text: the consumer that
    # subscribes to it must pass that code (4.9.3 does), not the code of "TagA"
    sub = build_subscription("T", "TagA\u3000")
    assert 80578777 in sub.tag_codes()
    assert build_subscription("T", "TagA").tag_codes() == frozenset({2598919})


def test_heartbeat_subscription_of_a_no_break_space_is_not_everything() -> None:
    sub = SubscriptionData.from_json({"topic": "T", "subString": "\xa0", "tagsSet": ["\xa0"],
                                      "codeSet": [160]})
    assert not sub.matches_all
    assert sub.tag_codes() == frozenset({160})
