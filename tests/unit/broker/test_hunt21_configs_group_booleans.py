"""A subscription group's boolean fields read as fastjson reads them (4.9.3's SubscriptionGroupConfig from
subscriptionGroup.json or an UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body): the number 1 is true (it was read
as false: ``"consumeEnable": 1`` stopped the group's consumption), and a value that is no boolean is refused
(it was silently false), so a file holding one loads the ``.bak``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.broker.groups import SubscriptionGroupConfig, SubscriptionGroupTable


@pytest.mark.parametrize(("raw", "expected"), [
    (True, True), (False, False), (1, True), (0, False), (2, False), (1.0, True),
    ("true", True), ("TRUE", True), ("false", False), ("1", True), ("0", False), ("Y", True), ("N", False),
    (None, True), ("", True),
])
def test_a_boolean_field_reads_as_fastjson_reads_it(raw: object, expected: bool) -> None:
    cfg = SubscriptionGroupConfig.from_json({"groupName": "g", "consumeEnable": raw})
    assert cfg.consume_enable is expected


@pytest.mark.parametrize("raw", ["maybe", "yes", [1], {"a": 1}])
def test_a_boolean_field_that_is_no_boolean_is_refused(raw: object) -> None:
    with pytest.raises(ValueError, match="consumeEnable"):
        SubscriptionGroupConfig.from_json({"groupName": "g", "consumeEnable": raw})


def test_a_file_with_a_boolean_that_is_no_boolean_loads_the_bak(tmp_path: Path) -> None:
    def table(consume_enable: object) -> str:
        return json.dumps({"subscriptionGroupTable": {"g": {"groupName": "g", "consumeEnable": consume_enable,
                                                             "retryMaxTimes": 3}}})

    (tmp_path / "subscriptionGroup.json").write_text(table("maybe"), encoding="utf-8")
    (tmp_path / "subscriptionGroup.json.bak").write_text(table(1), encoding="utf-8")
    groups = SubscriptionGroupTable(str(tmp_path))
    groups.load()
    loaded = groups.get("g")
    assert loaded is not None and loaded.consume_enable is True and loaded.retry_max_times == 3
