"""UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with a null number field (``{"retryMaxTimes": null}``, what a tool that
writes every field of a partly filled config sends) was answered SYSTEM_ERROR "retryMaxTimes is not a
number: None".  4.9.3 (fastjson 1.2.48) leaves such a field at its default: each field sent as null, and as
the strings ``""``, ``"null"`` and ``"NULL"``, to 4.9.3's broker, then read back with
GET_ALL_SUBSCRIPTIONGROUP_CONFIG, came back as the default (captured from 4.9.3, below).  A value that is no
number stays refused, as 4.9.3 refuses it (``"many"``, ``[1]``, ``{}``, ``" 7"``, ``"1_0"``, ``"7.0"``); a
string with commas is read without them (4.9.3: ``"1,000"`` is 1000).  The subscriptionGroup.json entries are
read the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection

from rocketstore.broker.groups import SubscriptionGroupConfig, SubscriptionGroupTable
from rocketstore.remoting import RequestCode, ResponseCode

#: GET_ALL_SUBSCRIPTIONGROUP_CONFIG's entry of a group created by {"groupName": "<g>", "<field>": null}, for
#: every field (and by every field null at once), as 4.9.3's broker answered it
DEFAULTS_FROM_4_9_3 = {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True,
                       "consumeFromMinEnable": True, "notifyConsumerIdsChangedEnable": True, "retryMaxTimes": 16,
                       "retryQueueNums": 1, "whichBrokerWhenConsumeSlowly": 1}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_null_fields_of_a_group_body_keep_their_defaults(cluster: LocalCluster) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        bodies: dict[str, bytes] = {}
        for field in DEFAULTS_FROM_4_9_3:
            bodies[f"null-{field}"] = json.dumps({"groupName": f"null-{field}", field: None}).encode()
        bodies["all-null"] = json.dumps({"groupName": "all-null", **dict.fromkeys(DEFAULTS_FROM_4_9_3)}).encode()
        bodies["raw-null"] = b'{"groupName":"raw-null","retryMaxTimes":null,"retryQueueNums":null}'
        for i, text in enumerate(("", "null", "NULL")):
            bodies[f"text-{i}"] = json.dumps({"groupName": f"text-{i}", "retryMaxTimes": text,
                                              "brokerId": text}).encode()
        for group, body in bodies.items():
            reply = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
            assert reply.code == ResponseCode.SUCCESS, (group, reply.remark)
        listed = conn.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = json.loads(listed.body)["subscriptionGroupTable"]
        for group in bodies:
            assert table[group] == {"groupName": group, **DEFAULTS_FROM_4_9_3}, group

        commas = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                              body=json.dumps({"groupName": "commas", "retryMaxTimes": "1,000"}).encode())
        assert commas.code == ResponseCode.SUCCESS, commas.remark
        made = cluster.call(lambda: cluster.broker.groups.get("commas"))
        assert made is not None and made.retry_max_times == 1000

        # 4.9.3: SYSTEM_ERROR "com.alibaba.fastjson.JSONException: parseInt error, field : retryMaxTimes, ..."
        # (",100": fastjson drops commas only when the first is not the string's first character; a boolean
        # in a long field: "parseLong error, field : brokerId" (review of 49c5bce, fastjson 1.2.48))
        for wire, value in [*(("retryMaxTimes", v) for v in ("many", [1], {}, " 7", "1_0", "7.0", "Null", ",100")),
                            ("brokerId", True)]:
            reply = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                 body=json.dumps({"groupName": "refused", wire: value}).encode())
            assert reply.code == ResponseCode.SYSTEM_ERROR, value
            assert wire in (reply.remark or ""), reply.remark
        assert cluster.call(lambda: cluster.broker.groups.get("refused")) is None
    finally:
        conn.close()


def test_a_file_entry_with_null_numbers_loads_with_the_defaults(tmp_path: Path) -> None:
    entry = {"groupName": "g", "consumeEnable": False, "retryMaxTimes": None, "retryQueueNums": "",
             "brokerId": None, "whichBrokerWhenConsumeSlowly": "null"}
    (tmp_path / "subscriptionGroup.json").write_text(json.dumps({"subscriptionGroupTable": {"g": entry}}),
                                                     encoding="utf-8")
    groups = SubscriptionGroupTable(str(tmp_path))
    groups.load()
    assert groups.get("g") == SubscriptionGroupConfig("g", consume_enable=False)
