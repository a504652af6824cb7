"""Delayed messages across broker restarts: stopped before they are due, they are delivered after the
restart, not earlier than due, and exactly once (also across a further restart); and a broker opened on a
copy of the real RocketMQ 4.9.3 ``delay-demo`` store carries on from that store's delayOffset.json."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.broker.schedule import SCHEDULE_TOPIC
from rocketstore.client import Producer
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run
from rocketstore.store.message_store import MessageStore

#: level 3 is 10 s (as RocketMQ's default): ample time to stop the broker before it is due, even on a busy machine
LEVELS = {"message_delay_level": "1s 2s 10s"}
TOPIC = "DelayRestart"


async def _request(addr: str, code: int) -> RemotingCommand:
    pool = ConnectionPool()
    try:
        return await pool.request(addr, RemotingCommand.request(code, {}), 5)
    finally:
        await pool.close()


def _all(store: MessageStore, topic: str, queue_id: int) -> list[StoredMessage]:
    return store.get(topic, queue_id, 0, 64).messages


def test_delayed_messages_are_delivered_once_after_a_restart_and_not_before_due(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        async def send() -> list[int]:
            async with Producer(cluster.namesrv_addr, "delay-producer") as producer:
                return [(await producer.send(TOPIC, f"late-{i}".encode(), properties={"DELAY": "3"},
                                             queue_id=i % 2)).queue_offset for i in range(3)]

        assert run(send()) == [0, 1, 2]
        cluster.wait_until(lambda: cluster.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 3, 20,
                           "three messages waiting in SCHEDULE_TOPIC_XXXX queue 2")
        waiting = cluster.call(lambda: _all(cluster.broker.store, SCHEDULE_TOPIC, 2))
    due = {m.body: m.store_timestamp + 10_000 for m in waiting}

    with MessageStore.open(store_dir, cluster.broker.store_config, read_only=True) as store:
        assert store.max_offset(TOPIC, 0) + store.max_offset(TOPIC, 1) == 0, \
            "stopped before due: nothing reached the topic yet"

    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        broker = cluster.broker
        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) + broker.store.max_offset(TOPIC, 1) == 3, 60,
                           "the three delayed messages after the restart")
        assert cluster.run(broker.schedule.deliver_due(3)) is True  # type: ignore[union-attr]
        cluster.wait_dispatched()  # a second delivery would be in the topic's queues now
        delivered = cluster.call(lambda: _all(broker.store, TOPIC, 0) + _all(broker.store, TOPIC, 1))
    assert sorted(m.body for m in delivered) == sorted(due), "each delayed message exactly once"
    for m in delivered:
        assert m.store_timestamp >= due[m.body], f"{m.body!r} delivered before it was due"
        assert m.queue_id == int(m.body.decode().split("-")[1]) % 2, "delivered to the queue it was sent to"
    assert (store_dir / "config" / "delayOffset.json").read_text(encoding="utf-8") == \
        '{\n\t"offsetTable":{3:3\n\t}\n}'

    # a further restart delivers nothing again
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        broker = cluster.broker
        assert cluster.call(lambda: broker.schedule.offsets) == {3: 3}  # type: ignore[union-attr]
        assert cluster.run(broker.schedule.deliver_due(3)) is True  # type: ignore[union-attr]
        cluster.wait_dispatched()
        assert cluster.call(lambda: broker.store.max_offset(TOPIC, 0) + broker.store.max_offset(TOPIC, 1)) == 3


def test_broker_loads_the_real_delay_offsets_and_delivers_only_what_is_left(golden_copy, golden_config) -> None:  # type: ignore[no-untyped-def]
    path = golden_copy("delay-demo")
    geometry = golden_config("delay-demo")
    overrides = {"mapped_file_size_commit_log": geometry.mapped_file_size_commit_log,
                 "mapped_file_size_consume_queue": geometry.mapped_file_size_consume_queue,
                 "max_hash_slot_num": geometry.max_hash_slot_num, "max_index_num": geometry.max_index_num}
    with LocalCluster(path, store_overrides=overrides) as cluster:
        broker = cluster.broker
        assert cluster.call(lambda: broker.schedule is not None and broker.schedule.offsets.get(1)) == 1
        # level 3 was due long ago: it is delivered at once, to DelayTopic queue 0 (its REAL_QID)
        cluster.wait_until(lambda: broker.store.max_offset("DelayTopic", 0) == 2, 30, "the level 3 delivery")
        for level in (1, 2, 3):  # levels 1 and 2 were delivered by the real broker: never again
            assert cluster.run(broker.schedule.deliver_due(level)) is True  # type: ignore[union-attr]
        assert cluster.call(lambda: (broker.store.max_offset("DelayTopic", 0), broker.store.max_offset("DelayTopic", 1),
                                     broker.schedule.delivered_count)) == (2, 1, 1)  # type: ignore[union-attr]
        [late] = cluster.call(lambda: broker.store.get("DelayTopic", 0, 1, 1).messages)
        assert late.body == b"delayed 10s (not yet due at shutdown)"
        assert late.properties["DELAY"] == "3" and late.properties["REAL_QID"] == "0"
        assert str(late.store_host) == "127.0.0.1:10911" and late.born_timestamp == 1700000000002
        # mqadmin's GET_ALL_DELAY_OFFSET answer: the compact fastjson text, integer keys unquoted
        answer = cluster.run(_request(cluster.broker_addr, RequestCode.GET_ALL_DELAY_OFFSET))
        assert answer.code == ResponseCode.SUCCESS and answer.body == b'{"offsetTable":{1:1,2:1,3:1}}'
    text = (path / "config" / "delayOffset.json").read_text(encoding="utf-8")
    assert text == '{\n\t"offsetTable":{1:1,2:1,3:1\n\t}\n}'
