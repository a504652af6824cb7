"""config/subscriptionGroup.json: the table's key names the group, as RocketMQ 4.9.3's
SubscriptionGroupManager.decode puts the file's map into its table.

An entry copied by hand to provision another group (only its key changed) or written with a null
groupName must configure the group its key names: keyed by groupName instead, the copy replaced the
original group's settings, the group the key named was missing (refused SUBSCRIPTION_GROUP_NOT_EXIST
without autoCreateSubscriptionGroup, or auto-created with consumption enabled) and a null groupName made
a group literally named "None".
"""

from __future__ import annotations

import json
from pathlib import Path

from rocketstore.broker.groups import SubscriptionGroupTable


def test_each_entry_configures_the_group_its_key_names(tmp_path: Path) -> None:
    table = {
        "OrdersGroup": {"groupName": "OrdersGroup", "consumeEnable": True, "retryMaxTimes": 5},
        # copied from the entry above, key changed, groupName left as it was
        "AuditGroup": {"groupName": "OrdersGroup", "consumeEnable": False, "retryMaxTimes": 2},
        "NullNameGroup": {"groupName": None, "consumeEnable": False, "retryMaxTimes": 7},
    }
    (tmp_path / "subscriptionGroup.json").write_text(json.dumps({"subscriptionGroupTable": table}),
                                                     encoding="utf-8")
    groups = SubscriptionGroupTable(str(tmp_path), auto_create=False)
    groups.load()

    orders, audit, null_name = (groups.find_or_create(g)
                                for g in ("OrdersGroup", "AuditGroup", "NullNameGroup"))
    assert orders is not None and (orders.consume_enable, orders.retry_max_times) == (True, 5)
    assert audit is not None and (audit.consume_enable, audit.retry_max_times) == (False, 2)
    assert null_name is not None and (null_name.consume_enable, null_name.retry_max_times) == (False, 7)
    assert "None" not in groups.table

