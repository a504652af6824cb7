"""remoting/versions.py: 4.9.3's MQVersion.Version names by ordinal, getVersionDesc's behaviour past the end,
and the CLI's and the exporter's version names, which are that one function."""

from __future__ import annotations

import pytest

from rocketstore.cli.group_admin_cmds import version_name
from rocketstore.client.export_admin import version_desc
from rocketstore.remoting.codes import MQ_VERSION, MQVersion
from rocketstore.remoting.versions import VERSION_NAMES, get_version_desc


@pytest.mark.parametrize(("ordinal", "name"), [
    (0, "V3_0_0_SNAPSHOT"), (28, "V3_0_7_SNAPSHOT"), (61, "V3_1_7"), (293, "V4_4_0"), (399, "V4_9_3"),
    (400, "V4_9_4_SNAPSHOT"), (611, "V5_9_9"), (612, "HIGHER_VERSION")])
def test_ordinals_are_named_as_in_4_9_3(ordinal: int, name: str) -> None:
    assert get_version_desc(ordinal) == name


def test_the_table_is_4_9_3s_enum() -> None:
    assert len(VERSION_NAMES) == 613 and len(set(VERSION_NAMES)) == 613
    assert get_version_desc(MQ_VERSION) == "V4_9_3"
    # the ordinals protocol rules compare against agree with the table
    assert all(VERSION_NAMES[member.value] == member.name for member in MQVersion)


def test_past_the_end_is_the_last_constant_as_get_version_desc_answers() -> None:
    assert get_version_desc(613) == get_version_desc((1 << 31) - 1) == "HIGHER_VERSION"


def test_a_negative_ordinal_is_shown_as_its_number() -> None:
    assert get_version_desc(-1) == "-1"


@pytest.mark.parametrize("ordinal", [293, 61, 5000])
def test_the_cli_and_the_exporter_name_versions_codes_does_not(ordinal: int) -> None:
    assert version_name(ordinal) == version_desc(ordinal) == get_version_desc(ordinal)
    assert not version_name(ordinal).isdigit()
