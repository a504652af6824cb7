"""The broker's queue lock table (LOCK_BATCH_MQ) holds only locks a real consumer could ask for.

4.9.3's RebalanceLockManager grants and records whatever (group, topic, brokerName, queueId) a request
names, and an entry goes only when it is unlocked: a flood of made-up queues grew the table for good (three
requests of 50,000 locks kept ~57 MB; one 16 MiB request can add ~270,000).  A real client (RebalanceImpl.lock
and lockAll, the Python and C++ clients alike) asks the master of the broker name in its route for the queues
of its subscribed topics there, for the group it heartbeats: a topic this broker holds, this broker's name,
a queue id below the topic's queue count.  The broker now grants (and records) only those, for a group it
knows; the others are left out of ``lockOKMQSet`` as a queue another member holds is.  An entry older than
the lock's 60 s life is dropped on the next lock request (a deleted topic's or group's would stay for ever).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from local_cluster import LocalCluster
from raw_frames import RawConnection

from rocketstore.broker.client_handlers import QueueLocks
from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, build_subscription
from rocketstore.remoting.transport import run

GROUP = "jlock-ord"
TOPIC = "JlockT"
CLIENT = "192.0.2.2@27299#13455487128991"
BROKER = "jlock-a"
#: a 4.9.3 Java orderly push consumer's lock renewal (RebalanceImpl.lockAll) of its 4 queues and its retry
#: topic's, captured against our broker named jlock-a; the answer granted every queue
JAVA_LOCK_ALL = (b'{"clientId":"192.0.2.2@27299#13455487128991","consumerGroup":"jlock-ord","mqSet":['
                 b'{"brokerName":"jlock-a","queueId":0,"topic":"%RETRY%jlock-ord"},'
                 b'{"brokerName":"jlock-a","queueId":0,"topic":"JlockT"},'
                 b'{"brokerName":"jlock-a","queueId":1,"topic":"JlockT"},'
                 b'{"brokerName":"jlock-a","queueId":2,"topic":"JlockT"},'
                 b'{"brokerName":"jlock-a","queueId":3,"topic":"JlockT"}]}')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("jlock") / "store", broker_name=BROKER) as c:
        c.create_topic(TOPIC, 4)
        yield c


@pytest.fixture
def conn(cluster: LocalCluster) -> Iterator[RawConnection]:
    c = RawConnection(cluster.broker_addr)
    hb = HeartbeatData(CLIENT, (), (ConsumerData(GROUP, subscriptions=(build_subscription(TOPIC, "*"),)),))
    assert c.request(RequestCode.HEART_BEAT, body=hb.encode()).code == ResponseCode.SUCCESS
    yield c
    c.close()


def lock(conn: RawConnection, mqs: list[dict[str, object]], group: str = GROUP,
         client_id: str = CLIENT) -> list[tuple[str, str, int]]:
    body = json.dumps({"consumerGroup": group, "clientId": client_id, "mqSet": mqs}).encode()
    reply = conn.request(RequestCode.LOCK_BATCH_MQ, body=body)
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    granted = json.loads(reply.body)["lockOKMQSet"]
    return sorted((m["topic"], m["brokerName"], m["queueId"]) for m in granted)


def mq(topic: str, queue_id: int, broker_name: str = BROKER) -> dict[str, object]:
    return {"topic": topic, "brokerName": broker_name, "queueId": queue_id}


def table(cluster: LocalCluster) -> list[tuple[str, str, str, int]]:
    return cluster.call(lambda: sorted(cluster.broker.queue_locks.locks))


def update_topic(cluster: LocalCluster, topic: str, read: int, write: int) -> None:
    async def update() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=read,
                                     write_queue_nums=write)

    run(update())


def test_a_flood_of_made_up_queues_is_granted_nothing_and_leaves_the_table_as_it_was(
        cluster: LocalCluster, conn: RawConnection) -> None:
    before = table(cluster)
    flood = ([mq(f"NoSuchTopic{i}", i % 8) for i in range(3000)]  # topics this broker does not hold
             + [mq(TOPIC, i, f"broker-{i}") for i in range(3000)]  # another broker's name
             + [mq(TOPIC, 4 + i) for i in range(3000)]  # past the topic's 4 queues
             + [mq(TOPIC, -1 - i) for i in range(100)])
    assert lock(conn, flood) == []
    # the real queues, for a group this broker never heard of (no heartbeat, no subscription group)
    assert lock(conn, [mq(TOPIC, i) for i in range(4)], group="made-up-group") == []
    assert table(cluster) == before, "the made-up queues were recorded"


def test_a_java_consumers_lock_renewal_is_granted_every_queue(
        cluster: LocalCluster, conn: RawConnection) -> None:
    reply = conn.request(RequestCode.LOCK_BATCH_MQ, body=JAVA_LOCK_ALL)
    assert reply.code == ResponseCode.SUCCESS
    granted = json.loads(reply.body)["lockOKMQSet"]
    wanted = [(f"%RETRY%{GROUP}", 0)] + [(TOPIC, i) for i in range(4)]
    assert sorted((m["topic"], m["queueId"]) for m in granted) == wanted
    assert conn.request(RequestCode.UNLOCK_BATCH_MQ, body=JAVA_LOCK_ALL).code == ResponseCode.SUCCESS


def test_a_real_consumer_locks_the_queues_of_its_topic_and_retry_topic(
        cluster: LocalCluster, conn: RawConnection) -> None:
    retry = f"%RETRY%{GROUP}"
    wanted = [(TOPIC, BROKER, i) for i in range(4)] + [(retry, BROKER, 0)]
    assert lock(conn, [mq(t, q, b) for t, b, q in wanted]) == sorted(wanted)
    assert {k for k in table(cluster) if k[0] == GROUP} >= {(GROUP, t, b, q) for t, b, q in wanted}
    # a group made by an admin (no consumer yet) may lock too
    async def create_group() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_subscription_group("jlock-admin-group", broker_addr=cluster.broker_addr)

    run(create_group())
    assert lock(conn, [mq(TOPIC, 0)], group="jlock-admin-group") == [(TOPIC, BROKER, 0)]


def test_a_topic_with_fewer_queues_keeps_those_a_routed_client_may_still_ask_for(
        cluster: LocalCluster, conn: RawConnection) -> None:
    topic = "JlockShrinking"
    cluster.create_topic(topic, 8)
    update_topic(cluster, topic, 2, 8)  # fewer read queues: clients routed before still ask for 8 a while
    assert lock(conn, [mq(topic, i) for i in (0, 5, 7, 8)]) == [(topic, BROKER, q) for q in (0, 5, 7)]
    update_topic(cluster, topic, 2, 2)
    assert lock(conn, [mq(topic, i) for i in (0, 1, 2, 7)]) == [(topic, BROKER, q) for q in (0, 1)]


def test_an_expired_entry_is_dropped_by_the_next_lock() -> None:
    """4.9.3 keeps an entry until it is unlocked: a deleted topic's or group's locks stayed for ever."""
    locks = QueueLocks(max_live_ms=60_000)
    assert locks.try_lock("g", "c1", [("Gone", "b", 0), ("Gone", "b", 1)], 1_000) == [("Gone", "b", 0),
                                                                                        ("Gone", "b", 1)]
    assert locks.try_lock("g", "c1", [("T", "b", 0)], 30_000) == [("T", "b", 0)]
    assert locks.try_lock("g", "c1", [("Gone", "b", 1)], 40_000) == [("Gone", "b", 1)]  # renewed
    assert locks.try_lock("g2", "c2", [], 61_001) == []
    assert list(locks.locks) == [("g", "T", "b", 0), ("g", "Gone", "b", 1)]  # ("Gone", 0) expired, dropped
    # still held where 60 s have not passed: another member is refused
    assert locks.try_lock("g", "c2", [("T", "b", 0), ("Gone", "b", 1)], 90_000) == []
    assert locks.try_lock("g", "c2", [("T", "b", 0)], 90_001) == [("T", "b", 0)]  # expired: taken over
    assert list(locks.locks) == [("g", "Gone", "b", 1), ("g", "T", "b", 0)]
    assert locks.try_lock("g", "c2", [], 100_001) == []
    assert list(locks.locks) == [("g", "T", "b", 0)]
