"""The schedule service at its edges, on a real broker with the Python client (and the C++ client for a
delayed send): records in SCHEDULE_TOPIC_XXXX that cannot be delivered, messageDelayLevel changed between
restarts, delayOffset.json unreadable, deliveries to queues and topics the topic table does not have, a
slave and its promotion, and a send-back waiting at its retry level across a restart.

4.9.3 takes a record's delivery time from its consume-queue tagsCode (written with the delay levels of the
put), re-reads the same entry for ever when its REAL_QID does not parse or its put fails (the whole level
waits behind it; we drop such a record with an error instead), and its store puts to any queue id of any
topic whatever the topic table says.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from cpp_driver import requires_cpp_client
from local_cluster import SMALL_STORE, LocalCluster
from test_cpp_client import produce
from test_replication import start_slave, stop

from rocketstore.broker.schedule import SCHEDULE_TOPIC
from rocketstore.client import Producer, PullConsumer
from rocketstore.errors import CorruptFileError
from rocketstore.message.record import Message
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

TOPIC = "DelayEdge"
LEVELS = {"message_delay_level": "1s 2s 3s"}


def _send(cluster: LocalCluster, body: bytes, delay: int, queue_id: int = 0) -> int:
    async def go() -> int:
        async with Producer(cluster.namesrv_addr, "delay-edge-producer") as producer:
            return (await producer.send(TOPIC, body, properties={"DELAY": str(delay)}, queue_id=queue_id)).queue_offset

    return run(go())


def _bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    return [m.body for m in store.get(topic, queue_id, 0, 64).messages]


def _scheduled(real_topic: str, real_qid: str, body: bytes, level: int = 1) -> Message:
    """A SCHEDULE_TOPIC_XXXX record as another writer may have left it (put without applying DELAY)."""
    return Message(SCHEDULE_TOPIC, body, {"DELAY": str(level), "REAL_TOPIC": real_topic, "REAL_QID": real_qid},
                   level - 1)


def test_records_that_cannot_be_delivered_are_dropped_and_the_level_goes_on(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides=LEVELS) as cluster:
        cluster.create_topic(TOPIC, queues=2)
        broker = cluster.broker
        odd = [_scheduled(TOPIC, "\u00b2", b"superscript two"),  # str.isdigit, but neither int() nor parseInt
               _scheduled(TOPIC, "--3", b"two signs"),
               _scheduled(TOPIC, "99999999999", b"past an int"),
               _scheduled(TOPIC, "-3", b"negative queue"),
               _scheduled("no topic!", "0", b"no topic name"),  # the put answers MESSAGE_ILLEGAL
               _scheduled(TOPIC, "+1", b"plus one"),  # Integer.parseInt takes the sign: queue 1
               _scheduled(TOPIC, "7", b"past the queue count"),  # the store puts there, as 4.9.3's does
               # delivered there it would wait in schedule queue 0 again, and again (4.9.3 loops so)
               _scheduled(SCHEDULE_TOPIC, "0", b"its own schedule queue")]
        for message in odd:
            assert cluster.call(partial(broker.store.put, message, apply_delay=False)).status.name == "PUT_OK"
        assert _send(cluster, b"sent after them", 1) == len(odd)  # (its offset in the schedule queue)

        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) == 1, 20,
                           "the delayed message behind the undeliverable ones")
        cluster.wait_until(lambda: broker.schedule.offsets.get(1) == len(odd) + 1, 10,  # type: ignore[union-attr]
                           "level 1's delivery offset past every record")
        cluster.wait_dispatched()
        store = broker.store
        assert cluster.call(lambda: (_bodies(store, TOPIC, 0), _bodies(store, TOPIC, 1), _bodies(store, TOPIC, 7))) \
            == ([b"sent after them"], [b"plus one"], [b"past the queue count"])
        assert cluster.call(lambda: store.topics().get("no topic!")) is None
        assert cluster.call(lambda: store.max_offset(SCHEDULE_TOPIC, 0)) == len(odd) + 1
        assert cluster.call(lambda: broker.schedule.delivered_count) == 3  # type: ignore[union-attr]


def test_a_delivery_to_a_topic_deleted_meanwhile_is_stored_there(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides=LEVELS) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert _send(cluster, b"outlives its topic", 2) == 0

        async def delete() -> int:
            pool = ConnectionPool()
            try:
                request = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC})
                return (await pool.request(cluster.broker_addr, request, 5)).code
            finally:
                await pool.close()

        assert run(delete()) == ResponseCode.SUCCESS
        broker = cluster.broker
        assert cluster.call(lambda: broker.topics.get(TOPIC)) is None
        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) == 1, 20, "the delivery to the deleted topic")
        assert cluster.call(lambda: _bodies(broker.store, TOPIC, 0)) == [b"outlives its topic"]


def _store_delayed(store_dir: Path, levels: str, bodies: dict[bytes, int]) -> dict[bytes, int]:
    """Put delayed messages through an embedded store (no schedule service runs: none is delivered);
    their store times."""
    config = StoreConfig(store_path_root_dir=str(store_dir), message_delay_level=levels, **SMALL_STORE)
    with MessageStore.open(store_dir, config) as store:
        results = {body: store.put(Message(TOPIC, body, {"DELAY": str(level)}, 0)) for body, level in bodies.items()}
        assert store.wait_dispatched(10)
        return {body: store.get(SCHEDULE_TOPIC, r.queue_id, r.queue_offset, 1).messages[0].store_timestamp
                for body, r in results.items()}


def test_a_longer_level_after_a_restart_keeps_the_delay_the_message_was_stored_with(tmp_path: Path) -> None:
    stored = _store_delayed(tmp_path / "store", "1s 2s 3s", {b"three seconds": 3})
    # level 3 is an hour now, and the unit of the others changed: 4.9.3 delivers by the tagsCode (store + 3 s)
    with LocalCluster(tmp_path / "store", store_overrides={"message_delay_level": "1m 2m 1h 1d"}) as cluster:
        broker = cluster.broker
        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) == 1, 20, "the delivery at store time + 3 s")
        [delivered] = cluster.call(lambda: broker.store.get(TOPIC, 0, 0, 1).messages)
    assert delivered.body == b"three seconds" and delivered.store_timestamp >= stored[b"three seconds"] + 3000


def test_a_shorter_level_after_a_restart_delivers_at_once(tmp_path: Path) -> None:
    _store_delayed(tmp_path / "store", "1s 2s 1h", {b"an hour": 3})
    # the hour is further ahead than the new whole delay: correctDeliverTimestamp makes it due now
    with LocalCluster(tmp_path / "store", store_overrides=LEVELS) as cluster:
        broker = cluster.broker
        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) == 1, 20, "the delivery of the shortened level")


def test_fewer_levels_after_a_restart_leave_the_others_waiting_with_their_offsets(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        _send(cluster, b"level one", 1)
        _send(cluster, b"level two", 2)
        cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == 2, 20, "both deliveries")
    _store_delayed(store_dir, "1s 2s 3s", {b"level two again": 2})
    with LocalCluster(store_dir, store_overrides={"message_delay_level": "1s"}) as cluster:
        schedule = cluster.broker.schedule
        assert schedule is not None
        # 4.9.3 keeps the offsets of levels it no longer has and serves only the levels it has
        assert cluster.call(lambda: (sorted(schedule.levels), schedule.offsets)) == ([1], {1: 1, 2: 1})
        assert cluster.run(schedule.deliver_due(1)) is True
    assert (store_dir / "config" / "delayOffset.json").read_text(encoding="utf-8") == \
        '{\n\t"offsetTable":{1:1,2:1\n\t}\n}'
    with MessageStore.open(store_dir, StoreConfig(store_path_root_dir=str(store_dir), **SMALL_STORE),
                           read_only=True) as store:
        assert store.max_offset(TOPIC, 0) == 2, "the level the broker no longer had was not delivered"


def test_a_truncated_delay_offset_file_is_read_from_its_bak_and_nothing_is_delivered_twice(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        _send(cluster, b"once", 1)
        cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == 1, 20, "the delivery")
    path = store_dir / "config" / "delayOffset.json"
    good = path.read_text(encoding="utf-8")
    assert good == '{\n\t"offsetTable":{1:1\n\t}\n}'
    Path(f"{path}.bak").write_text(good, encoding="utf-8")
    path.write_text(good[:18], encoding="utf-8")  # cut off mid-table, as a torn copy would be
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        broker = cluster.broker
        assert cluster.call(lambda: broker.schedule.offsets) == {1: 1}  # type: ignore[union-attr]
        assert cluster.run(broker.schedule.deliver_due(1)) is True  # type: ignore[union-attr]
        cluster.wait_dispatched()
        assert cluster.call(lambda: broker.store.max_offset(TOPIC, 0)) == 1

    # both unreadable: 4.9.3's ConfigManager.load fails and the broker does not start
    path.write_text("{\n\t\"offsetTable\":{1:", encoding="utf-8")
    Path(f"{path}.bak").write_text("not json", encoding="utf-8")
    with pytest.raises(CorruptFileError), LocalCluster(store_dir, store_overrides=LEVELS):
        pass


def test_a_slave_does_not_deliver_and_a_promoted_slave_goes_on_from_the_masters_offsets(tmp_path: Path) -> None:
    store = {**LEVELS, "mapped_file_size_commit_log": 64 * 1024}
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=store) as cluster:
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            assert slave.schedule is not None and not slave.schedule.started  # loaded, as 4.9.3's slave
            _send(cluster, b"delivered by the master", 1)
            cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == 1, 20, "the master's delivery")
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == cluster.broker.store.max_commit_log_offset
                               and slave.store.dispatch_behind_bytes == 0, 30, "the slave to catch up")
            assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
            # the slave's queue holds only the master's delivery, replicated
            assert cluster.call(lambda: _bodies(slave.store, TOPIC, 0)) == [b"delivered by the master"]
        finally:
            stop(cluster, slave)
    assert (tmp_path / "slave" / "config" / "delayOffset.json").read_text(encoding="utf-8") == \
        '{"offsetTable":{1:1}}'
    # the slave's store started again as the master: level 1 carries on after the delivered message
    with LocalCluster(tmp_path / "slave", store_overrides=store) as promoted:
        broker = promoted.broker
        assert promoted.call(lambda: broker.schedule.offsets) == {1: 1}  # type: ignore[union-attr]
        assert promoted.run(broker.schedule.deliver_due(1)) is True  # type: ignore[union-attr]
        promoted.wait_dispatched()
        assert promoted.call(lambda: _bodies(broker.store, TOPIC, 0)) == [b"delivered by the master"]


def test_a_send_back_waiting_at_its_retry_level_is_delivered_once_after_a_restart(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    levels = {"message_delay_level": "1s 2s 30s"}  # send-back's level 3 + reconsumeTimes: stopped long before due
    group = "delay-edge-group"
    with LocalCluster(store_dir, store_overrides=levels) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "delay-edge-producer") as producer:
                return (await producer.send(TOPIC, b"consume me later", queue_id=0)).msg_id

        msg_id = run(send())
        cluster.wait_dispatched()

        async def consume_and_send_back() -> None:
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                [mq] = await consumer.queues(TOPIC)
                [message] = (await consumer.pull(mq, 0, 1)).messages
            # what a consumer sends for a message it will consume later (delayLevel 0: 3 + reconsumeTimes)
            ext = {"offset": str(message.commit_log_offset), "group": group, "delayLevel": "0",
                   "originMsgId": msg_id, "originTopic": TOPIC}
            pool = ConnectionPool()
            try:
                answer = await pool.request(cluster.broker_addr, RemotingCommand.request(
                    RequestCode.CONSUMER_SEND_MSG_BACK, ext), 5)
            finally:
                await pool.close()
            assert answer.code == ResponseCode.SUCCESS, answer.remark

        run(consume_and_send_back())
        cluster.wait_until(lambda: cluster.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 1, 10, "the retry waiting")
    with MessageStore.open(store_dir, StoreConfig(store_path_root_dir=str(store_dir), **SMALL_STORE),
                           read_only=True) as store:
        [waiting] = store.get(SCHEDULE_TOPIC, 2, 0, 1).messages
        assert store.max_offset(f"%RETRY%{group}", 0) == 0
    # due 30 s after the send-back: the restarted broker's clock says so once we move it on
    with LocalCluster(store_dir, store_overrides=levels) as cluster:
        broker = cluster.broker
        schedule = broker.schedule
        assert schedule is not None
        cluster.call(lambda: setattr(schedule, "_clock_ms", lambda: waiting.store_timestamp + 30_000))
        cluster.wait_until(lambda: broker.store.max_offset(f"%RETRY%{group}", 0) == 1, 20, "the retry's delivery")
        assert cluster.run(schedule.deliver_due(3)) is True  # nothing more is due
        cluster.wait_dispatched()
        [retried] = cluster.call(lambda: broker.store.get(f"%RETRY%{group}", 0, 0, 8).messages)
    assert retried.body == b"consume me later" and retried.reconsume_times == 1
    assert retried.properties["RETRY_TOPIC"] == TOPIC and retried.properties["DELAY"] == "3"


@requires_cpp_client
def test_a_cpp_clients_delayed_message_keeps_its_delay_when_the_level_grows_over_a_restart(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides={"message_delay_level": "1s 2s 10s"}) as cluster:
        sent = produce(cluster, tmp_path, TOPIC, "cpp-delay-edge-producer", 1, "--delay", "3")
        assert [s["status"] for s in sent] == ["OK"]
        cluster.wait_until(lambda: cluster.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 1, 10, "the waiting message")
        [waiting] = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 2, 0, 1).messages)
    with LocalCluster(store_dir, store_overrides={"message_delay_level": "1s 2s 1h"}) as cluster:
        broker = cluster.broker
        queue_id = int(waiting.properties["REAL_QID"])
        delivered = cluster.wait_until(lambda: broker.store.get(TOPIC, queue_id, 0, 1).messages, 30,
                                       "the delivery at store time + 10 s")
    assert delivered[0].body == waiting.body and delivered[0].store_timestamp >= waiting.store_timestamp + 10_000


def test_a_delay_offset_past_its_queues_end_goes_on_from_the_end(tmp_path: Path) -> None:
    """A delayOffset.json ahead of its queue (copied from another broker, a master's taken by a slave whose
    queue lags or is missing): 4.9.3's timer task, finding no entry there, carries on from the queue's max
    offset, so the messages put from then on are delivered."""
    store_dir = tmp_path / "store"
    (store_dir / "config").mkdir(parents=True)
    (store_dir / "config" / "delayOffset.json").write_text('{"offsetTable":{1:5,2:3}}', encoding="utf-8")
    with LocalCluster(store_dir, store_overrides=LEVELS) as cluster:
        broker = cluster.broker
        _send(cluster, b"level two", 2)  # queue 1 exists now and holds one entry: level 2's 3 is past it
        _send(cluster, b"level one", 1)  # level 1's queue did not exist when the broker started
        cluster.wait_until(lambda: broker.store.max_offset(TOPIC, 0) == 2, 20, "both deliveries")
        cluster.wait_until(lambda: broker.schedule.offsets == {1: 1, 2: 1}, 10,  # type: ignore[union-attr]
                           "the offsets after the queues' entries")
        assert sorted(cluster.call(lambda: _bodies(broker.store, TOPIC, 0))) == [b"level one", b"level two"]
