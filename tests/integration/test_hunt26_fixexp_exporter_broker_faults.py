"""How the exporter takes a master that answers some calls and not others.

A master that answered its topic stats and then did not answer a later call (a topic's put rate, a
group's rates) used to cost a timeout per topic or group on every collection: only a broker that failed
its topic stats was taken as down.  Now the first timeout of any call takes it as down for the rest of
that collection, and it is asked nothing more.

An answer that is an error (SYSTEM_ERROR, TOPIC_NOT_EXIST) or a body that cannot be read is not a broker
down: apache/rocketmq-exporter leaves that one series out (each call has its own try) and goes on asking
the broker.  Before, a body that was not JSON took the broker as down (its later topics went unserved),
and one of an unexpected shape failed the whole collection (/metrics answered 503).

The other master is a small asyncio server speaking the remoting codec, registered with a real name
server under its own broker name, that answers some request codes and never answers others.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import collect, render
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.frame_decoder import decode_command
from rocketstore.remoting.transport import run

FAKE = "broker-fake"
#: a request the fake does not answer at all
HANG = object()


def _offset_table(topic: str, max_offset: int) -> bytes:
    # GET_TOPIC_STATS_INFO's body as 4.9.3 writes it: fastjson, a MessageQueue object as the map key
    return (f'{{"offsetTable":{{{{"brokerName":"{FAKE}","queueId":0,"topic":"{topic}"}}:'
            f'{{"lastUpdateTimestamp":0,"maxOffset":{max_offset},"minOffset":0}}}}}}').encode()


def _stats() -> bytes:
    # VIEW_BROKER_STATS_DATA's body (BrokerStatsData) as 4.9.3 writes it
    window = {"avgpt": 0.0, "sum": 60, "tps": 1.0}
    return json.dumps({"statsDay": window, "statsHour": window, "statsMinute": window}).encode()


class FakeBroker:
    """Answers each request as *answer* says: a (code, body) pair, or HANG to leave it unanswered."""

    def __init__(self, answer: Callable[[RemotingCommand], Any]) -> None:
        self.answer = answer
        self.asked: list[RemotingCommand] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                request = decode_command(await reader.readexactly(size))
                self.asked.append(request)
                answer = self.answer(request)
                if answer is HANG:
                    continue
                code, body = answer
                writer.write(encode_command(request.make_response(code, body=body, remark=None if code == 0
                                                                  else "captured-style error remark")))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass


def _base_answer(request: RemotingCommand, topic_stats: Callable[[str], Any] | None = None,
                 consume_stats: bytes = b'{"brokerAddr":"x","consumeStatsList":[],"totalDiff":0}',
                 hang: str | None = None) -> Any:
    ext = request.ext_fields
    if _is(request, hang):
        return HANG
    if request.code == RequestCode.GET_BROKER_RUNTIME_INFO:
        return 0, json.dumps({"table": {"commitLogMaxOffset": "100", "brokerVersionDesc": "V4_9_3"}}).encode()
    if request.code == RequestCode.VIEW_BROKER_STATS_DATA:
        return 0, _stats()
    if request.code == RequestCode.GET_TOPIC_STATS_INFO:
        topic = ext["topic"]
        return topic_stats(topic) if topic_stats is not None else (0, _offset_table(topic, 7))
    if request.code == RequestCode.QUERY_TOPIC_CONSUME_BY_WHO:
        return 0, b'{"groupList":[]}'
    if request.code == RequestCode.GET_BROKER_CONSUME_STATS:
        return 0, consume_stats
    if request.code == RequestCode.GET_CONSUMER_CONNECTION_LIST:
        return ResponseCode.CONSUMER_NOT_ONLINE, b""
    return ResponseCode.SYSTEM_ERROR, b""


def _is(request: RemotingCommand, what: str | None) -> bool:
    """Whether *request* is a PULL_MESSAGE (*what* "PULL_MESSAGE") or asks the stat item *what*."""
    if what == "PULL_MESSAGE":
        return request.code == RequestCode.PULL_MESSAGE
    return request.code == RequestCode.VIEW_BROKER_STATS_DATA and request.ext_fields.get("statsName") == what


def _scrape(tmp_path: Any, topics: list[str],
            answer: Callable[[RemotingCommand], Any]) -> tuple[dict[Any, float], FakeBroker]:
    fake = FakeBroker(answer)
    with LocalCluster(tmp_path / "store") as cluster:
        async def listen() -> asyncio.Server:
            return await asyncio.start_server(fake.serve, "127.0.0.1", 0)

        server = cluster.run(listen())
        addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        body = RegisterBrokerBody({t: TopicConfig(t, 1, 1) for t in topics},
                                  DataVersion(int(time.time() * 1000), 1))
        cluster.call(lambda: cluster.namesrv.routes.register_broker(
            "DefaultCluster", addr, FAKE, 0, "", body, int(time.time() * 1000)))

        async def scrape() -> str:
            async with AdminClient(cluster.namesrv_addr, timeout_s=0.3) as admin:
                return render(await collect(admin))

        try:
            text = run(scrape())
        finally:
            server.close()
            for writer in fake.writers:
                writer.close()
    values = {(s.name, frozenset(s.labels.items())): s.value
              for family in text_string_to_metric_families(text) for s in family.samples}
    return values, fake


def _find(values: dict[Any, float], name: str, **labels: str) -> list[float]:
    return [v for (n, ls), v in values.items() if n == name and set(labels.items()) <= ls]


@pytest.mark.parametrize("hang", ["TOPIC_PUT_NUMS", "GROUP_GET_NUMS", "PULL_MESSAGE"])
def test_a_master_that_hangs_after_its_topic_stats_is_asked_nothing_more(tmp_path: Any, hang: str) -> None:
    topics = [f"Hunt26FixexpHang{i}" for i in range(5)]
    groups = [f"hunt26-fixexp-g{i}" for i in range(4)]
    # GET_BROKER_CONSUME_STATS's body as 4.9.3 writes it: each group with offsets of a topic on this broker,
    # 4 messages behind (the exporter pulls the first of them for its store time)
    consume_stats = json.dumps({"brokerAddr": "x", "totalDiff": 0, "consumeStatsList": [
        {g: [{"consumeTps": 0.0, "offsetTable": "@KEY@"}]} for g in groups]})
    consume_stats = consume_stats.replace(
        '"@KEY@"', f'{{{{"brokerName":"{FAKE}","queueId":0,"topic":"{topics[0]}"}}:'
                   f'{{"brokerOffset":7,"consumerOffset":3,"lastTimestamp":0}}}}')
    values, fake = _scrape(tmp_path, topics, lambda r: _base_answer(r, consume_stats=consume_stats.encode(),
                                                                   hang=hang))
    asked = [(r.code, r.ext_fields.get("statsName")) for r in fake.asked]
    assert sum(_is(r, hang) for r in fake.asked) == 1, asked  # once, not once per topic / group
    assert _is(fake.asked[-1], hang), asked  # and nothing after it
    assert _find(values, "rocketstore_exporter_scrape_errors") == [1]
    # what it answered before it hung is served
    assert _find(values, "rocketmq_brokeruntime_commitlog_maxoffset", brokerHost=FAKE) == [100]
    assert _find(values, "rocketmq_producer_offset", broker=FAKE, topic=topics[0]) == [7]


def test_answered_errors_leave_the_broker_up(tmp_path: Any) -> None:
    topics = ["Hunt26FixexpA", "Hunt26FixexpB", "Hunt26FixexpC", "Hunt26FixexpD", "Hunt26FixexpE"]

    def topic_stats(topic: str) -> Any:
        if topic == topics[0]:  # 4.9.3's answer for a topic the broker does not hold
            return ResponseCode.TOPIC_NOT_EXIST, b""
        if topic == topics[1]:
            return 0, b"{not json"
        if topic == topics[2]:  # JSON, of the wrong shape: a queue's stats that are not an object
            key = f'{{"brokerName":"{FAKE}","queueId":0,"topic":"{topic}"}}'
            return 0, f'{{"offsetTable":{{{key}:5}}}}'.encode()
        return 0, _offset_table(topic, 7)

    def answer(request: RemotingCommand) -> Any:
        if request.code == RequestCode.GET_BROKER_RUNTIME_INFO:
            return ResponseCode.SYSTEM_ERROR, b""
        return _base_answer(request, topic_stats)

    values, fake = _scrape(tmp_path, topics, answer)
    assert _find(values, "rocketstore_exporter_scrape_errors") == [4]
    # no runtime series, but the rates read on their own are served (as rocketmq-exporter serves them)
    assert not _find(values, "rocketmq_brokeruntime_commitlog_maxoffset", brokerHost=FAKE)
    assert _find(values, "rocketmq_broker_tps", broker=FAKE) == [1.0]
    for topic in topics[:3]:
        assert not _find(values, "rocketmq_producer_offset", broker=FAKE, topic=topic)
    for topic in topics[3:]:  # asked after the bad answers, and served
        assert _find(values, "rocketmq_producer_offset", broker=FAKE, topic=topic) == [7]
        assert _find(values, "rocketmq_producer_tps", broker=FAKE, topic=topic) == [1.0]
    assert any(r.code == RequestCode.GET_BROKER_CONSUME_STATS for r in fake.asked)
