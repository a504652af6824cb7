"""A subscription group's boolean field read exactly as fastjson 1.2.76 (4.9.3's) reads it, past the cases
test_hunt21_configs_group_booleans covers: castToBoolean takes "T" and "N" case-sensitively (a "t" or "n"
is "can not cast to boolean", so the file is unreadable and its .bak is read), a fraction by its truncated
int value (1.5 is true), and an int past Java's int range does not decode."""

from __future__ import annotations

import pytest

from rocketstore.broker.groups import SubscriptionGroupConfig


@pytest.mark.parametrize(("raw", "expected"), [
    (1.5, True), (1.99, True), (0.5, False), (-1.0, False), ("y", True), ("f", False), ("T", True), ("N", False),
    (4294967297.0, True),
])
def test_a_boolean_field_reads_as_fastjson_1_2_76_reads_it(raw: object, expected: bool) -> None:
    cfg = SubscriptionGroupConfig.from_json({"groupName": "g", "consumeEnable": raw})
    assert cfg.consume_enable is expected


@pytest.mark.parametrize("raw", ["t", "n", 1 << 32, 1 + (1 << 32), -(1 << 31) - 1])
def test_what_fastjson_cannot_cast_to_boolean_is_refused(raw: object) -> None:
    with pytest.raises(ValueError, match="consumeEnable"):
        SubscriptionGroupConfig.from_json({"groupName": "g", "consumeEnable": raw})
