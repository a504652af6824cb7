"""The admin client and the CLI take the group names a Java client takes.

4.9.3's Validators.checkGroup allows a group of up to 255 characters (CHARACTER_MAX_LENGTH), a topic up to 127
(TOPIC_MAX_LENGTH); the admin checks refused every name over 127, so a group a Java consumer ran under
could not be looked at with ``rocketstore group progress``.  A trailing newline slipped past the old ``$``
anchor."""

from __future__ import annotations

import pytest

from rocketstore.client.admin import InvalidNameError, check_name


@pytest.mark.parametrize("length", [128, 200, 255])
def test_a_group_name_up_to_255_characters_passes(length: int) -> None:
    name = "G" * length
    assert check_name("group", name) == name


def test_a_group_name_over_255_characters_is_refused_naming_the_limit() -> None:
    with pytest.raises(InvalidNameError, match="use 1 to 255 of the characters"):
        check_name("group", "G" * 256)


def test_a_topic_name_stays_limited_to_127_characters() -> None:
    assert check_name("topic", "T" * 127) == "T" * 127
    with pytest.raises(InvalidNameError, match="use 1 to 127 of the characters"):
        check_name("topic", "T" * 128)


@pytest.mark.parametrize("kind", ["topic", "group"])
def test_a_name_ending_in_a_newline_is_refused(kind: str) -> None:
    with pytest.raises(InvalidNameError):
        check_name(kind, "TopicA\n")
