"""Many topics on a real broker + name server, driven by real clients: creating topics (admin requests, sends
to new topics) writes topics.json off the event loop and coalesces concurrent changes, yet every creation
is in topics.json before it is answered (as 4.9.3 persists before it answers); the registration body with
every topic is encoded off the broker's loop, and a big one decoded off the name server's.

Counts writes, encodes and the threads they run on; never times anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from rocketstore.broker import config_files
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.bodies import RegisterBrokerBody, TopicConfig
from rocketstore.remoting.transport import run
from tests.integration.local_cluster import LocalCluster

CONCURRENT = 24


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of every write of topics.json, in order (the real write still happens)."""
    threads: list[int] = []
    real = config_files.write_text_atomically

    def counted(path: str, obj: Any) -> None:
        if os.path.basename(path) == "topics.json":
            threads.append(threading.get_ident())
        real(path, obj)

    monkeypatch.setattr(config_files, "write_text_atomically", counted)
    return threads


def _on_disk(cluster: LocalCluster) -> set[str]:
    path = Path(cluster.store_dir) / "config" / "topics.json"
    return set(json.loads(path.read_text(encoding="utf-8"))["topicConfigTable"])


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_concurrent_creations_are_written_off_the_loop_and_each_is_on_disk_when_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flush: str) -> None:
    with LocalCluster(tmp_path / "store", store_overrides={"flush_disk_type": flush}) as cluster:
        writes = _count_writes(monkeypatch)
        missing: list[str] = []

        async def create(admin: AdminClient, topic: str) -> None:
            await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=2, write_queue_nums=2)
            if topic not in _on_disk(cluster):
                missing.append(topic)

        async def send(producer: Producer, topic: str) -> None:
            result = await producer.send(topic, b"auto-created")  # a new topic: TBW102's auto-create
            assert result.status == "SEND_OK"
            if topic not in _on_disk(cluster):
                missing.append(topic)

        async def main() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await asyncio.gather(*(create(admin, f"Admin{i}") for i in range(CONCURRENT)))
            async with Producer(cluster.namesrv_addr, "hunt15_scale_pg") as producer:
                # the route of TBW102 first, so the sends to unknown topics go to this broker
                await producer.send("Admin0", b"warm")
                await asyncio.gather(*(send(producer, f"Auto{i}") for i in range(CONCURRENT)))

        run(main())
        assert missing == [], f"answered before topics.json held them: {missing}"
        loop_thread = cluster.thread.ident
        assert loop_thread not in writes, "topics.json was written on the broker's event loop"
        # 48 creations, most of them concurrent: far fewer whole-file writes than creations
        assert len(writes) < 2 * CONCURRENT, f"{len(writes)} writes for {2 * CONCURRENT} creations"
        names = cluster.call(lambda: {tc.topic_name for tc in cluster.broker.topics})
        assert {f"Admin{i}" for i in range(CONCURRENT)} | {f"Auto{i}" for i in range(CONCURRENT)} <= names
    # and the file the broker left at close holds them all
    with LocalCluster(tmp_path / "store") as again:
        names = again.call(lambda: {tc.topic_name for tc in again.broker.topics})
        assert {f"Admin{i}" for i in range(CONCURRENT)} | {f"Auto{i}" for i in range(CONCURRENT)} <= names


def test_the_registration_of_many_topics_is_encoded_and_decoded_off_the_loops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[int] = []
    decoded: list[int] = []
    real_encode = RegisterBrokerBody.encode
    real_decode = RegisterBrokerBody.decode.__func__  # type: ignore[attr-defined]

    def encode(self: RegisterBrokerBody) -> bytes:
        encoded.append(threading.get_ident())
        return real_encode(self)

    def decode(cls: type[RegisterBrokerBody], body: bytes, **kw: Any) -> RegisterBrokerBody:
        if len(body) >= 64 * 1024:
            decoded.append(threading.get_ident())
        return real_decode(cls, body, **kw)

    with LocalCluster(tmp_path / "store") as cluster:
        monkeypatch.setattr(RegisterBrokerBody, "encode", encode)
        monkeypatch.setattr(RegisterBrokerBody, "decode", classmethod(decode))

        def add_many() -> None:  # 1,500 topics (~210 KB of registration JSON), then one registration
            for i in range(1500):
                cluster.broker.topics.table[f"Many{i}"] = TopicConfig(f"Many{i}", 1, 1)
            cluster.broker.topics.update(TopicConfig("ManyLast", 1, 1))
            cluster.broker.topic_created()

        cluster.call(add_many)
        cluster.wait_until(lambda: cluster.namesrv.routes.route("ManyLast") is not None, 20.0, "the registration")
        assert cluster.call(lambda: cluster.namesrv.routes.route("Many1499")) is not None
        loop_thread = cluster.thread.ident
        assert encoded and loop_thread not in encoded, "the registration body was encoded on the broker's loop"
        assert decoded and loop_thread not in decoded, "the big registration was decoded on the name server's loop"


def test_the_whole_table_answers_are_encoded_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GET_ALL_TOPIC_CONFIG / GET_ALL_SUBSCRIPTIONGROUP_CONFIG / GET_ALL_CONSUMER_OFFSET (what a slave asks
    every 10 s, and admin tools) of big tables: encoded on the broker's executor, answered whole."""
    from rocketstore.broker.groups import SubscriptionGroupConfig
    from rocketstore.broker.offsets import ConsumerOffsetTable
    from rocketstore.remoting import fastjson
    from rocketstore.remoting.codes import RequestCode, ResponseCode
    from rocketstore.remoting.command import RemotingCommand
    from rocketstore.remoting.transport import connect

    with LocalCluster(tmp_path / "store") as cluster:
        def fill() -> None:
            for i in range(500):
                cluster.broker.topics.update(TopicConfig(f"Table{i}", 2, 2))
                cluster.broker.groups.update(SubscriptionGroupConfig(f"table_group_{i}"))
                cluster.broker.offsets.commit(f"table_group_{i}", f"Table{i}", 1, i)

        cluster.call(fill)
        threads: dict[str, list[int]] = {"topics": [], "groups": [], "offsets": []}
        real_topic_json, real_group_json = TopicConfig.to_json, SubscriptionGroupConfig.to_json
        real_all_json = ConsumerOffsetTable.all_json

        def topic_json(self: TopicConfig) -> dict[str, Any]:
            threads["topics"].append(threading.get_ident())
            return real_topic_json(self)

        def group_json(self: SubscriptionGroupConfig) -> dict[str, Any]:
            threads["groups"].append(threading.get_ident())
            return real_group_json(self)

        def all_json(self: ConsumerOffsetTable) -> dict[str, dict[int, int]]:
            threads["offsets"].append(threading.get_ident())
            return real_all_json(self)

        monkeypatch.setattr(TopicConfig, "to_json", topic_json)
        monkeypatch.setattr(SubscriptionGroupConfig, "to_json", group_json)
        monkeypatch.setattr(ConsumerOffsetTable, "all_json", all_json)

        async def ask(code: int) -> dict[str, Any]:
            conn = await connect(cluster.broker_addr)
            try:
                answer = await conn.request(RemotingCommand.request(code, {}), 20.0)
            finally:
                conn.close()
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            return fastjson.loads(answer.body)

        topics = run(ask(RequestCode.GET_ALL_TOPIC_CONFIG))["topicConfigTable"]
        groups = run(ask(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))["subscriptionGroupTable"]
        offsets = run(ask(RequestCode.GET_ALL_CONSUMER_OFFSET))["offsetTable"]
        assert {f"Table{i}" for i in range(500)} <= set(topics) and topics["Table7"]["readQueueNums"] == 2
        assert {f"table_group_{i}" for i in range(500)} <= set(groups)
        assert offsets["Table499@table_group_499"] == {"1": 499} or offsets["Table499@table_group_499"] == {1: 499}
        loop_thread = cluster.thread.ident
        for what, seen in threads.items():
            assert seen, f"{what}: not encoded at all"
            assert loop_thread not in seen, f"the {what} answer was encoded on the broker's event loop"


def test_heartbeats_of_new_groups_are_answered_once_their_configs_are_on_disk(tmp_path: Path) -> None:
    """A consumer heartbeat auto-creates its group and %RETRY% topic; 4.9.3 persists both before it answers,
    and so do we, with the writes off the loop and shared by the heartbeats that arrive together."""
    from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
    from rocketstore.remoting.codes import RequestCode, ResponseCode
    from rocketstore.remoting.command import RemotingCommand
    from rocketstore.remoting.transport import connect

    groups_path = tmp_path / "store" / "config" / "subscriptionGroup.json"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("HbWrites", 1)
        missing: list[str] = []

        async def join(i: int) -> None:
            group = f"hb_writes_{i}"
            body = HeartbeatData(f"hb-writes-{i}", (), (ConsumerData(
                group, subscriptions=(SubscriptionData("HbWrites", "*"),)),)).encode()
            conn = await connect(cluster.broker_addr)
            try:
                answer = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, body), 20.0)
            finally:
                conn.close()
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            if group not in json.loads(groups_path.read_text(encoding="utf-8"))["subscriptionGroupTable"]:
                missing.append(group)
            if f"%RETRY%{group}" not in _on_disk(cluster):
                missing.append(f"%RETRY%{group}")

        async def main() -> None:
            await asyncio.gather(*(join(i) for i in range(CONCURRENT)))

        run(main())
        assert missing == [], f"answered before the files held them: {missing}"
