"""The Node RocketMQ client ali-ons (npm ``ali-ons`` 3.12.0, pure JavaScript: its own codec, the extFields
as numbers and booleans, its own request signing) against our name server and broker, unchanged: sends
with tags, keys and a user property are stored as sent under the ids it was given, a clustering consumer
with a tag expression receives exactly the matching ones, and with ACL on its signatures are accepted and
a wrong secret is refused.  ali-ons does not create topics from TBW102, so the tests create them first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, acl_home
from ons_driver import OnsClient

from rocketstore.message.message_id import decode_offset_message_id

TOPIC = "OnsTopic"


def _create_topic(cluster: LocalCluster, topic: str) -> None:
    from rocketstore.remoting.bodies import TopicConfig

    def create() -> None:
        cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=4, write_queue_nums=4))

    cluster.call(create)
    cluster.run(cluster.broker.registrar.register_all())  # the name server learns of it now, not in 30 s


def _sends(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert any(line.get("done") for line in lines), lines[-3:]
    return [line for line in lines if "i" in line]


def test_ali_ons_produces_and_a_tag_filtered_ali_ons_consumer_gets_the_matching_ones(
        tmp_path: Path, ons_client: OnsClient) -> None:
    count = 20
    with LocalCluster(tmp_path / "store") as cluster:
        _create_topic(cluster, TOPIC)
        consumer = ons_client.start(["consume", cluster.namesrv_addr, TOPIC, "ons-group", "TagA", str(count // 2)])
        sent = _sends(ons_client.run(["produce", cluster.namesrv_addr, TOPIC, "ons-producer", str(count)]))
        assert [s["status"] for s in sent] == ["SEND_OK"] * count

        store = cluster.broker.store
        for s in sent:  # the id ali-ons got is the offset message id of the stored record
            host, offset = decode_offset_message_id(s["msg_id"])
            m = cluster.call(lambda offset=offset: store.message_at(offset))
            assert m is not None, s
            i = s["i"]
            assert (m.topic, m.queue_id, m.queue_offset) == (TOPIC, s["queue_id"], s["queue_offset"])
            assert m.body == f"ons-{i} ünï".encode()
            assert (m.tags, m.keys, m.properties.get("color")) == ("TagB" if i % 2 else "TagA", f"key-{i}", f"blue-{i}")
            assert host.port == int(cluster.broker_addr.rsplit(":", 1)[1])

        got = [line for line in OnsClient.finish(consumer) if "body" in line]
        assert sorted(g["body"] for g in got) == sorted(f"ons-{i} ünï" for i in range(0, count, 2))
        assert all(g["tags"] == "TagA" and g["color"] == f"blue-{g['body'].split()[0][4:]}" for g in got)
        by_body = {f"ons-{s['i']} ünï": s for s in sent}
        assert all((g["queue_id"], g["queue_offset"]) == (by_body[g["body"]]["queue_id"], by_body[g["body"]]["queue_offset"])
                   for g in got)


def test_ali_ons_signatures_pass_the_brokers_acl_and_a_wrong_secret_does_not(
        tmp_path: Path, ons_client: OnsClient) -> None:
    home = acl_home(
        tmp_path / "home",
        "accounts:\n  - accessKey: ons-access-key\n    secretKey: ons-secret-key\n    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: SUB\n")
    keys = {"ONS_ACCESS_KEY": "ons-access-key", "ONS_SECRET_KEY": "ons-secret-key"}
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        _create_topic(cluster, TOPIC)
        sent = _sends(ons_client.run(["produce", cluster.namesrv_addr, TOPIC, "ons-producer", "4"], keys))
        assert [s["status"] for s in sent] == ["SEND_OK"] * 4
        got = [line for line in ons_client.run(["consume", cluster.namesrv_addr, TOPIC, "ons-group", "*", "4"], keys)
               if "body" in line]
        assert sorted(g["body"] for g in got) == sorted(f"ons-{i} ünï" for i in range(4))

        refused = ons_client.run(["produce", cluster.namesrv_addr, TOPIC, "ons-producer", "1"],
                                 {**keys, "ONS_SECRET_KEY": "not-the-secret"})
        assert not _sends_ok(refused) and any("error" in line for line in refused), refused
        assert cluster.call(lambda: cluster.broker.put_count) == 4


def _sends_ok(lines: list[dict[str, Any]]) -> bool:
    return any(line.get("status") == "SEND_OK" for line in lines)


def test_an_ali_ons_consumer_that_asks_for_a_retry_gets_the_message_again_from_the_retry_topic(
        tmp_path: Path, ons_client: OnsClient) -> None:
    """ACTION_RETRY: ali-ons sends the message back (CONSUMER_SEND_MSG_BACK, its own header encoding), the
    broker stores it in %RETRY%<group> with delay level 3 (10 s) and redelivers it with reconsumeTimes 1."""
    with LocalCluster(tmp_path / "store") as cluster:
        _create_topic(cluster, TOPIC)
        sent = _sends(ons_client.run(["produce", cluster.namesrv_addr, TOPIC, "ons-producer", "2"]))
        assert [s["status"] for s in sent] == ["SEND_OK"] * 2
        lines = ons_client.run(["consume", cluster.namesrv_addr, TOPIC, "ons-retry", "*", "2", "--retry-first"],
                               timeout_s=120)
        deliveries = [line for line in lines if "body" in line]
        first = [d for d in deliveries if d["retried"]]
        again = [d for d in deliveries if not d["retried"]]
        assert sorted(d["body"] for d in first) == sorted(d["body"] for d in again) == ["ons-0 ünï", "ons-1 ünï"]
        assert all(d["reconsume_times"] == 0 for d in first) and all(d["reconsume_times"] == 1 for d in again)
        assert all(d["keys"].startswith("key-") and d["color"].startswith("blue-") for d in again)
        retry_offsets = cluster.call(lambda: cluster.broker.store.max_offset("%RETRY%ons-retry", 0))
        assert retry_offsets == 2
