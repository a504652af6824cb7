"""A fresh broker's subscription group table holds the groups a fresh 4.9.3 broker's does, and no more.

Ours also created CID_RMQ_SYS_TRACE (a 5.x default): it showed in every subscriptionGroup.json we wrote,
in the group lists of mqadmin, and a Java 4.9.3 slave took it over from our master by its config sync."""

from __future__ import annotations

import json
from pathlib import Path

from rocketstore.broker.groups import SubscriptionGroupTable

# the subscriptionGroupTable of config/subscriptionGroup.json that a fresh 4.9.3 broker wrote once one
# group ("GD", left out here) had been created with mqadmin updateSubGroup (captured from 4.9.3)
JAVA_493_DEFAULTS = {
    "SELF_TEST_C_GROUP", "CID_ONSAPI_OWNER", "CID_ONSAPI_PERMISSION", "TOOLS_CONSUMER",
    "CID_ONS-HTTP-PROXY", "FILTERSRV_CONSUMER", "CID_ONSAPI_PULL",
}


def test_the_default_groups_are_4_9_3s(tmp_path: Path) -> None:
    table = SubscriptionGroupTable(str(tmp_path))
    table.load()
    assert set(table.table) == JAVA_493_DEFAULTS
    table.persist()
    written = json.loads((tmp_path / "subscriptionGroup.json").read_text())["subscriptionGroupTable"]
    assert set(written) == JAVA_493_DEFAULTS
    for name, entry in written.items():  # each as 4.9.3 writes it: every switch on, 1 retry queue, 16 tries
        assert entry == {"groupName": name, "consumeEnable": True, "consumeFromMinEnable": True,
                         "consumeBroadcastEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16,
                         "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
                         "notifyConsumerIdsChangedEnable": True}, name


def test_a_system_prefixed_group_is_still_created_on_demand(tmp_path: Path) -> None:
    table = SubscriptionGroupTable(str(tmp_path), auto_create=False)
    table.load()
    assert table.find_or_create("CID_RMQ_SYS_TRACE") is not None
