"""Bug bash: a consumer group's subscription table kept as RocketMQ 4.9.3's ConsumerGroupInfo keeps it.

* A heartbeat carrying an OLDER subVersion of a topic's subscription (an old instance still running while a
  new one with a changed tag expression rolls out) does not replace the newer one: Java consumers pull
  without a subscription string and rely on the broker's table, so a flip-flopping table answers the new
  instance SUBSCRIPTION_NOT_LATEST and filters the old instance's pulls by the old expression half of the time.
* A heartbeat that changes a member's subscription set (a topic subscribed or unsubscribed at runtime) is
  announced to the group with NOTIFY_CONSUMER_IDS_CHANGED, as a new member is, so the others rebalance now.

* Long-polled pulls parked on one connection do not count toward its in-flight limit: a consumer of more
  queues than that limit would otherwise have its heartbeats, commits and sends left unread until a parked
  pull times out.

Raw connections speak the frames as a Java consumer does (pulls with sysFlag without the subscription bit).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster, acl_home
from test_bad_input import RawConnection, pull_ext, send_ext

from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.acl_signing import sign_ext_fields
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData, build_subscription
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.transport import DEFAULT_MAX_IN_FLIGHT

GROUP = "bugbash-group"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def heartbeat(client_id: str, *subs: SubscriptionData) -> bytes:
    return HeartbeatData(client_id, (), (ConsumerData(GROUP, subscriptions=subs),)).encode()


def java_pull(topic: str, sub_version: int) -> dict[str, str]:
    """A Java push consumer's pull: no subscription string (sysFlag without 0x4), its subVersion."""
    return pull_ext(topic, GROUP, sysFlag="0", subscription="", subVersion=str(sub_version))


def test_an_older_sub_version_from_another_member_does_not_replace_the_newer_subscription(
        cluster: LocalCluster) -> None:
    topic = "RollingTopic"
    new_instance, old_instance = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        for tag in ("TagOld", "TagNew"):
            ext = send_ext(topic, i=encode_properties({"TAGS": tag, "WAIT": "true"}))
            assert new_instance.request(RequestCode.SEND_MESSAGE_V2, ext, tag.encode()).code == ResponseCode.SUCCESS
        cluster.wait_dispatched()
        newer = build_subscription(topic, "TagNew", 2_000)
        older = build_subscription(topic, "TagOld", 1_000)
        # the new instance joins, then the old one (still running) heartbeats its older subscription
        assert new_instance.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@new", newer)).code == 0
        assert old_instance.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.2@old", older)).code == 0

        table = cluster.call(lambda: cluster.broker.clients.subscription(GROUP, topic))
        assert table is not None and (table.sub_string, table.sub_version) == ("TagNew", 2_000)
        pulled = new_instance.request(RequestCode.PULL_MESSAGE, java_pull(topic, 2_000))
        assert pulled.code == ResponseCode.SUCCESS, (pulled.code, pulled.remark)
        assert b"TagNew" in pulled.body and b"TagOld" not in pulled.body
    finally:
        new_instance.close()
        old_instance.close()


def wait_for_request(conn: RawConnection, code: int, timeout_s: float) -> RemotingCommand | None:
    """The next request of *code* the broker sends on *conn* within *timeout_s*, else None."""
    deadline = time.monotonic() + timeout_s
    while True:
        command = conn.decoder.next_command()
        if command is not None:
            if not command.is_response and command.code == code:
                return command
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn.sock.settimeout(left)
        try:
            data = conn.sock.recv(65536)
        except TimeoutError:
            return None
        if not data:
            raise AssertionError("the broker closed the connection")
        conn.decoder.feed(data)


def test_a_member_changing_its_subscribed_topics_is_announced_to_the_group(cluster: LocalCluster) -> None:
    first, second = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        t1 = build_subscription("TopicOne", "*", 1)
        t2 = build_subscription("TopicTwo", "*", 1)
        assert first.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@a", t1)).code == 0
        assert second.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.2@b", t1)).code == 0
        # the first member was told of the second joining; drain that notification
        assert wait_for_request(first, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 10.0) is not None
        while wait_for_request(second, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 0.5) is not None:
            pass
        # the same heartbeat again changes nothing: no notification
        assert first.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@a", t1)).code == 0
        assert wait_for_request(second, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 1.0) is None
        # the first member subscribes a second topic: the group hears of it
        assert first.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@a", t1, t2)).code == 0
        notify = wait_for_request(second, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 10.0)
        assert notify is not None and notify.ext_fields["consumerGroup"] == GROUP
        # and when it drops that topic again
        assert first.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@a", t1)).code == 0
        assert wait_for_request(second, RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 10.0) is not None
    finally:
        first.close()
        second.close()


def test_long_polled_pulls_beyond_the_in_flight_limit_do_not_stop_the_connections_other_requests(
        cluster: LocalCluster) -> None:
    """A consumer of more queues than the connection's in-flight limit (1024) parks that many long-polled
    pulls on one connection, as a 4.9.3 broker lets it: its other requests (heartbeats, offset commits, a
    producer's sends over the same client instance) must still be read and answered at once, not after
    a parked pull's suspend timeout."""
    topic = "ParkedTopic"
    conn = RawConnection(cluster.broker_addr)
    try:
        assert conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(topic), b"first").code == ResponseCode.SUCCESS
        cluster.wait_dispatched()
        parked = DEFAULT_MAX_IN_FLIGHT + 76
        pull = pull_ext(topic, GROUP, queueOffset="1", sysFlag="6", suspendTimeoutMillis="30000")
        conn.send_bytes(b"".join(encode_command(RemotingCommand.request(
            RequestCode.PULL_MESSAGE, pull, opaque=100_000 + i)) for i in range(parked)))
        cluster.wait_until(lambda: cluster.broker.pull_hold.waiting_count == parked, 20, "every pull to park")

        # a send on the same connection is answered before any parked pull
        conn.send_bytes(encode_command(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_ext(topic),
                                                               b"second", opaque=7)))
        first = next_response(conn, 40.0)
        assert first.opaque == 7 and first.code == ResponseCode.SUCCESS, (first.opaque, first.code, first.remark)

        # that message wakes every parked pull, and each finds it
        answers = [next_response(conn, 40.0) for _ in range(parked)]
        assert {a.opaque for a in answers} == {100_000 + i for i in range(parked)}
        assert all(a.code == ResponseCode.SUCCESS and b"second" in a.body for a in answers)
        assert conn.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"}).code == 0
        cluster.wait_until(lambda: all(c.in_flight_count == 0 for c in cluster.broker.server.connections), 10,
                           "nothing left in flight")
    finally:
        conn.close()


def next_response(conn: RawConnection, timeout_s: float) -> RemotingCommand:
    deadline = time.monotonic() + timeout_s
    while True:
        command = conn.decoder.next_command()
        if command is not None:
            if command.is_response:
                return command
            continue
        left = deadline - time.monotonic()
        assert left > 0, f"no response within {timeout_s} s"
        conn.sock.settimeout(left)
        data = conn.sock.recv(1 << 20)
        assert data, "the broker closed the connection"
        conn.decoder.feed(data)


def test_a_subscription_group_with_numbers_out_of_java_range_is_refused_and_creates_nothing(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with retryQueueNums 2^40 used to be stored, and the first send-back
    of the group then created a %RETRY% topic of 2^40 queues (registered with the name servers, written to
    topics.json where no RocketMQ broker can read it, listed queue by queue by every client)."""
    conn = RawConnection(cluster.broker_addr)
    try:
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext("PlainTopic"), b"x")
        assert sent.code == ResponseCode.SUCCESS
        offset = str(int(sent.ext_fields["msgId"][-16:], 16))
        # (a null retryQueueNums was refused here too; 4.9.3 keeps the default for a null number field, so it
        # is taken now: test_hunt28_leftb_group_body_nulls.py.  A list is no number, null or not)
        for field, value in (("retryQueueNums", 1 << 40), ("retryQueueNums", 1e30), ("retryMaxTimes", "many"),
                             ("retryQueueNums", [1]), ("brokerId", 1 << 70)):
            reply = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                 body=json.dumps({"groupName": "huge-group", field: value}).encode())
            assert reply.code == ResponseCode.SYSTEM_ERROR, (field, value, reply.remark)
            assert field in (reply.remark or ""), reply.remark
        assert cluster.call(lambda: cluster.broker.groups.get("huge-group")) is None
        back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
            "offset": offset, "group": "huge-group", "delayLevel": "0", "originMsgId": "x",
            "originTopic": "PlainTopic"})
        # as 4.9.3's findSubscriptionGroupConfig, the send-back creates the group with the defaults instead
        assert back.code == ResponseCode.SUCCESS, back.remark
        made = cluster.call(lambda: cluster.broker.topics.get("%RETRY%huge-group"))
        assert made is not None and made.read_queue_nums == made.write_queue_nums == 1

        # a group within range is taken, and its send-back makes a retry topic of that many queues
        ok = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                          body=json.dumps({"groupName": "fine-group", "retryQueueNums": "3"}).encode())
        assert ok.code == ResponseCode.SUCCESS
        back = conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
            "offset": offset, "group": "fine-group", "delayLevel": "0", "originMsgId": "x",
            "originTopic": "PlainTopic"})
        assert back.code == ResponseCode.SUCCESS, back.remark
        retry = cluster.call(lambda: cluster.broker.topics.get("%RETRY%fine-group"))
        assert retry is not None and retry.read_queue_nums == retry.write_queue_nums == 3
    finally:
        conn.close()
    assert not [r for r in caplog.records if r.exc_info], "a refused request logged a traceback"


@pytest.mark.parametrize("mq_set", [5, "queues", [{"topic": "T", "brokerName": "broker-a", "queueId": "x"}],
                                    [{"topic": "T", "brokerName": "broker-a", "queueId": 1 << 40}],
                                    [{"topic": "T", "brokerName": "broker-a", "queueId": None}]])
def test_a_malformed_lock_or_unlock_body_is_a_clear_error_without_a_traceback(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, mq_set: object) -> None:
    conn = RawConnection(cluster.broker_addr)
    try:
        body = json.dumps({"consumerGroup": GROUP, "clientId": "10.0.0.1@a", "mqSet": mq_set}).encode()
        for code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
            reply = conn.request(code, body=body)
            assert reply.code == ResponseCode.SYSTEM_ERROR, (code, reply.remark)
            assert reply.remark and reply.remark.startswith("JsonBodyError: "), reply.remark
        good = json.dumps({"consumerGroup": GROUP, "clientId": "10.0.0.1@a",
                           "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": 2}]}).encode()
        cluster.create_topic("T", 4)  # a topic and group the broker holds: it grants no lock on made-up ones
        assert conn.request(RequestCode.HEART_BEAT, body=heartbeat("10.0.0.1@a", build_subscription("T", "*"))
                            ).code == ResponseCode.SUCCESS
        locked = conn.request(RequestCode.LOCK_BATCH_MQ, body=good)
        assert locked.code == ResponseCode.SUCCESS and b'"queueId":2' in locked.body
    finally:
        conn.close()
    assert not [r for r in caplog.records if r.exc_info], "a refused request logged a traceback"


ACL_YML = """\
accounts:
  - accessKey: bugbash-ak
    secretKey: bugbash-secret
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


@pytest.mark.parametrize("body", [b"[1]", b'"text"', b'{"consumerDataSet": [1]}', b'{"consumerDataSet": {"a": 1}}',
                                  b'{"consumerDataSet": [{"groupName": "g", "subscriptionDataSet": [3]}]}',
                                  b'{"consumerDataSet": [{"groupName": "g", "subscriptionDataSet": "T"}]}'])
def test_with_acl_a_signed_heartbeat_of_the_wrong_shape_is_refused_without_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, body: bytes) -> None:
    home = acl_home(tmp_path / "home", ACL_YML)
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as acl_cluster:
        conn = RawConnection(acl_cluster.broker_addr)
        try:
            signed = sign_ext_fields({}, body, "bugbash-ak", "bugbash-secret")
            reply = conn.request(RequestCode.HEART_BEAT, signed, body)
            assert reply.code == ResponseCode.SYSTEM_ERROR
            assert (reply.remark or "").startswith("org.apache.rocketmq.acl.common.AclException: heartbeat body"), \
                reply.remark
            good = heartbeat("10.0.0.1@a", build_subscription("AclTopic", "*", 1))
            ok = conn.request(RequestCode.HEART_BEAT, sign_ext_fields({}, good, "bugbash-ak", "bugbash-secret"), good)
            assert ok.code == ResponseCode.SUCCESS, ok.remark
        finally:
            conn.close()
    assert not [r for r in caplog.records if r.exc_info], "a refused heartbeat logged a traceback"
