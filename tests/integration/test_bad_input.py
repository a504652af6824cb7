"""Bad input on raw sockets against a running broker: frames crafted with our codec (or by hand where the
codec would refuse to write them).

Rules shown here: an undecodable frame (garbage, a header length past the frame, a header that is not JSON)
and a frame declared over 16 MiB close that connection only (the oversized one before its body arrives: the
decoder rejects the length word, nothing of that size is buffered); an unknown request code gets
REQUEST_CODE_NOT_SUPPORTED; a missing or unparsable required header field gets SYSTEM_ERROR with the field
named; an invalid or path-escaping topic or group name gets SYSTEM_ERROR with RocketMQ's validation remark
and writes NOTHING (no directory, no file, no config entry).  A second, well-behaved connection is served
all along.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from raw_frames import RawConnection

from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import SerializeType
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES

DEADLINE_S = 20.0
GOOD_TOPIC, GOOD_GROUP = "GoodTopic", "good-group"

#: names no topic or group may have: path escapes, separators, blank, spaces, too long
BAD_TOPICS = ["../x", "a/b", "..", "/abs", "", " ", "has space", "x" * 128, "tab\there", "dot.name", "ünï"]
BAD_GROUPS = ["../x", "a/b", "..", "", "has space", "g" * 256, "at@sign", "back\\slash"]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def send_ext(topic: str, queue_id: int = 0, **extra: str) -> dict[str, str]:
    """SEND_MESSAGE_V2's one-letter header fields."""
    ext = {"a": "raw-producer", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
           "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties({"TAGS": "T", "WAIT": "true"})}
    ext.update(extra)
    return ext


def pull_ext(topic: str, group: str, queue_offset: int = 0, **extra: str) -> dict[str, str]:
    ext = {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": str(queue_offset),
           "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
           "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
    ext.update(extra)
    return ext


class GoodClient:
    """The well-behaved connection: a send to GoodTopic queue 0 and the pull of it, again and again."""

    def __init__(self, addr: str) -> None:
        self.conn = RawConnection(addr)
        self.sent = 0

    def round_trip(self) -> None:
        body = f"good-{self.sent}".encode()
        sent = self.conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(GOOD_TOPIC), body)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        offset = int(sent.ext_fields["queueOffset"])
        assert offset == self.sent
        self.sent += 1
        deadline = time.monotonic() + DEADLINE_S
        while True:  # the consume queue is written by dispatch a moment after the put
            pulled = self.conn.request(RequestCode.PULL_MESSAGE, pull_ext(GOOD_TOPIC, GOOD_GROUP, offset))
            if pulled.code == ResponseCode.SUCCESS:
                break
            assert time.monotonic() < deadline, f"message {offset} never became pullable: {pulled.code}"
            time.sleep(0.02)
        assert body in pulled.body


def snapshot(store: Path) -> dict[str, Any]:
    """Every path under the store (directories included) and the parsed config files."""
    paths = sorted(str(p.relative_to(store)) for p in store.rglob("*"))
    configs = {}
    for p in sorted((store / "config").glob("*.json")):
        configs[p.name] = json.loads(p.read_text(encoding="utf-8"))
    return {"paths": paths, "configs": configs}


def assert_rejected(reply: RemotingCommand, *words: str) -> None:
    assert reply.code == ResponseCode.SYSTEM_ERROR, (reply.code, reply.remark)
    remark = (reply.remark or "").lower()
    assert any(w in remark for w in words), reply.remark


def test_malformed_and_oversized_frames_close_only_their_connection(cluster: LocalCluster) -> None:
    good = GoodClient(cluster.broker_addr)
    good.round_trip()
    header = b'{"code":30,"flag":0,"language":"JAVA","opaque":1,"version":395}'
    cases = {
        # "GET " read as a length is ~1.1 GB: refused as over the limit
        "an HTTP request": b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n",
        "a negative length": b"\xde\xad\xbe\xef" * 4,
        "a length too small for the header word": struct.pack(">i", 2) + b"\x00\x00",
        "a header length past the frame": struct.pack(">iI", 8, 100) + b"{}\x00\x00",
        "a header length past the frame (binary header)": struct.pack(">iI", 8, (1 << 24) | 100) + b"\x00" * 4,
        "a header that is not JSON": struct.pack(">iI", 4 + 12, 12) + b"{not json!!}",
        "a JSON header that is not an object": struct.pack(">iI", 4 + 5, 5) + b"[1,2]",
        # (a JSON header without a code is request code 0, answered: test_hunt30_edges_header_without_code)
        "a JSON header cut short": struct.pack(">iI", 4 + 20, 20) + header[:20],
        "an unknown serialize type": struct.pack(">iI", 4 + len(header), (7 << 24) | len(header)) + header,
        "invalid UTF-8 in the header": struct.pack(">iI", 4 + 4, 4) + b"\xff\xfe\xfd\xfc",
        # declared one byte over the limit: refused on the length word, the 16 MiB never sent
        "a frame over 16 MiB": struct.pack(">i", MAX_FRAME_BYTES - 4 + 1) + b"\x00\x00\x00\x10",
        "a frame of 2 GiB": struct.pack(">i", 0x7FFFFFFF),
    }
    try:
        for what, data in cases.items():
            bad = RawConnection(cluster.broker_addr)
            try:
                bad.send_bytes(data)
                assert bad.closed_by_peer(), f"{what}: the broker kept the connection open"
            finally:
                bad.close()
            good.round_trip()
        # a connection that was fine, then sent garbage, is closed too; its earlier answers stood
        mixed = RawConnection(cluster.broker_addr)
        try:
            assert mixed.request(RequestCode.GET_MAX_OFFSET, {"topic": GOOD_TOPIC, "queueId": "0"}).code == 0
            mixed.send_bytes(b"\xff" * 8)
            assert mixed.closed_by_peer()
        finally:
            mixed.close()
        good.round_trip()
        cluster.wait_until(lambda: len(cluster.broker.server.connections) == 1, 10,
                           "only the good connection to be left")
    finally:
        good.conn.close()


def test_unknown_codes_and_missing_header_fields_get_error_answers_on_a_live_connection(
        cluster: LocalCluster) -> None:
    good = GoodClient(cluster.broker_addr)
    good.round_trip()
    conn = RawConnection(cluster.broker_addr)
    try:
        for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
            for code in (9999, -5, 0, 32767):
                reply = conn.request(code, {"x": "y"}, serialize_type=serialize_type)
                assert reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
                assert reply.remark == f" request type {code} not supported"

        no_topic = {k: v for k, v in send_ext(GOOD_TOPIC).items() if k != "b"}
        assert_rejected(conn.request(RequestCode.SEND_MESSAGE_V2, no_topic, b"x"), "'b'", "topic")
        v1 = {"producerGroup": "p", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": "0",
              "sysFlag": "0", "bornTimestamp": "0", "flag": "0"}
        assert_rejected(conn.request(RequestCode.SEND_MESSAGE, v1, b"x"), "topic")
        assert_rejected(conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(GOOD_TOPIC, e="zero"), b"x"), "'e'")
        no_queue = {k: v for k, v in pull_ext(GOOD_TOPIC, GOOD_GROUP).items() if k != "queueId"}
        assert_rejected(conn.request(RequestCode.PULL_MESSAGE, no_queue), "queueid")
        assert_rejected(conn.request(RequestCode.PULL_MESSAGE, pull_ext(GOOD_TOPIC, GOOD_GROUP, queueOffset="1e3")),
                        "queueoffset")
        assert_rejected(conn.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                     {"consumerGroup": GOOD_GROUP, "topic": GOOD_TOPIC, "queueId": "0"}),
                        "commitoffset")
        assert_rejected(conn.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                     {"consumerGroup": GOOD_GROUP, "topic": GOOD_TOPIC}), "queueid")
        assert_rejected(conn.request(RequestCode.GET_MAX_OFFSET, {"topic": GOOD_TOPIC}), "queueid")
        assert_rejected(conn.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "NoQueues", "defaultTopic": "TBW102"}),
                        "queuenums")
        assert_rejected(conn.request(RequestCode.VIEW_MESSAGE_BY_ID, {}), "offset")
        assert_rejected(conn.request(RequestCode.HEART_BEAT, body=b"{not json"), "json", "heartbeat")
        assert_rejected(conn.request(RequestCode.HEART_BEAT, body=b"[1]"), "heartbeat", "object")
        # after all that, the same connection still works
        assert conn.request(RequestCode.GET_MAX_OFFSET, {"topic": GOOD_TOPIC, "queueId": "0"}).code == 0
        good.round_trip()
    finally:
        conn.close()
        good.conn.close()
    assert not (Path(cluster.store_dir) / "consumequeue" / "NoQueues").exists()


def heartbeat(group: str, topic: str = GOOD_TOPIC, producer: str = "raw-producer") -> bytes:
    return HeartbeatData("127.0.0.1@raw#1", (producer,), (
        ConsumerData(group, subscriptions=(SubscriptionData(topic, "*"),)),)).encode()


def test_invalid_topic_and_group_names_are_refused_and_write_nothing(cluster: LocalCluster) -> None:
    store = Path(cluster.store_dir)
    good = GoodClient(cluster.broker_addr)
    conn = RawConnection(cluster.broker_addr)
    try:
        # everything the good client and the valid requests below touch exists before the snapshot
        good.round_trip()
        assert conn.request(RequestCode.HEART_BEAT, body=heartbeat(GOOD_GROUP)).code == 0
        assert conn.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": GOOD_GROUP, "topic": GOOD_TOPIC,
                                                                 "queueId": "0", "commitOffset": "1"}).code == 0
        cluster.call(lambda: cluster.broker.offsets.persist(force=True))
        before = snapshot(store)

        for topic in BAD_TOPICS:
            words = ("topic",)
            assert_rejected(conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(topic), b"x"), *words)
            assert_rejected(conn.request(RequestCode.SEND_MESSAGE, {
                "producerGroup": "p", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
                "queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0"}, b"x"), *words)
            assert_rejected(conn.request(RequestCode.SEND_BATCH_MESSAGE, send_ext(topic, m="true"), b""), *words)
            assert_rejected(conn.request(RequestCode.PULL_MESSAGE, pull_ext(topic, GOOD_GROUP)), *words)
            assert_rejected(conn.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
                "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}), *words)
            assert_rejected(conn.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": GOOD_GROUP, "topic": topic, "queueId": "0", "commitOffset": "5"}), *words)
            assert_rejected(conn.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": GOOD_GROUP, "topic": topic, "queueId": "0"}), *words)
            assert_rejected(conn.request(RequestCode.HEART_BEAT, body=heartbeat(GOOD_GROUP, topic)), *words)
            assert_rejected(conn.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}), *words)
        good.round_trip()

        for group in BAD_GROUPS:
            words = ("group",)
            assert_rejected(conn.request(RequestCode.PULL_MESSAGE, pull_ext(GOOD_TOPIC, group)), *words)
            assert_rejected(conn.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": group, "topic": GOOD_TOPIC, "queueId": "0", "commitOffset": "5"}), *words)
            assert_rejected(conn.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": group, "topic": GOOD_TOPIC, "queueId": "0"}), *words)
            assert_rejected(conn.request(RequestCode.HEART_BEAT, body=heartbeat(group)), *words)
            if group:
                assert_rejected(conn.request(RequestCode.HEART_BEAT, body=heartbeat(GOOD_GROUP, producer=group)),
                                *words)
                assert_rejected(conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                             body=json.dumps({"groupName": group}).encode()), *words)
            assert_rejected(conn.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": "0", "group": group, "delayLevel": "0", "originMsgId": "x", "originTopic": GOOD_TOPIC}),
                *words)
        good.round_trip()

        # nothing of the bad names reached the disk: no new path at all (the good connection's sends land in
        # files that already existed), config files unchanged (offsets written if anything dirtied them)
        assert not cluster.call(lambda: cluster.broker.offsets.persist()), "no offset was committed"
        after = snapshot(store)
        assert after == before
        assert sorted(os.listdir(store / "consumequeue")) == [GOOD_TOPIC]
        assert not (store.parent / "x").exists() and not (store / "x").exists() and not (store / "a").exists()

        # the longest valid names do work (127 characters for a topic, 255 for a group)
        long_topic, long_group = "T" * 127, "G" * 255
        sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(long_topic), b"long")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert conn.request(RequestCode.HEART_BEAT, body=heartbeat(long_group, long_topic)).code == 0
        assert conn.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": long_group, "topic": long_topic, "queueId": "0", "commitOffset": "1"}).code == 0
        cluster.wait_until(lambda: cluster.broker.store.max_offset(long_topic, 0) == 1, 10, "the long topic")
        assert cluster.call(lambda: cluster.broker.offsets.query(long_group, long_topic, 0)) == 1
        assert cluster.call(lambda: cluster.broker.groups.get(long_group)) is not None
        good.round_trip()
    finally:
        conn.close()
        good.conn.close()
