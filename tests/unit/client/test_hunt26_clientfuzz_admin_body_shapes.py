"""AdminClient reading a broker answer body of the wrong shape (numbers as text, nulls: another
implementation, a proxy, version skew) raises ClientError naming the answer, not the bare ValueError /
TypeError of the int() reading it.  4.9.3's DefaultMQAdminExt fails on such a body too (fastjson refuses to
put "abc" into a long), as an exception mqadmin reports; ours was an untyped error from deep in the parsing.

The bodies are written by hand in the shape of 4.9.3's TopicStatsTable, ConsumeStats and ConsumerConnection
(the fastjson output a 4.9.3 broker gives: objects as map keys, fields in alphabetical order), with the
number values spoiled; the route is conftest's ROUTE_4_9_3 (captured from a 4.9.3 name server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError
from rocketstore.client.group_admin import _connections
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt26AdminShapes"

_MQ = '{"brokerName":"broker-a","queueId":0,"topic":"' + TOPIC + '"}'
TOPIC_STATS = '{"offsetTable":{' + _MQ + ':{"lastUpdateTimestamp":%s,"maxOffset":%s,"minOffset":0}}}'
CONSUME_STATS = ('{"consumeTps":0.0,"offsetTable":{' + _MQ
                 + ':{"brokerOffset":%s,"consumerOffset":%s,"lastTimestamp":0}}}')


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 15)
    return asyncio.run(bounded())


def _admin_against(two_masters: Any, code: int, body: str, call: Any) -> Any:
    async def broker(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code == code:
            return request.make_response(ResponseCode.SUCCESS, body=body.encode())
        return request.make_response(ResponseCode.SUCCESS)

    async def scenario() -> Any:
        async with two_masters.serve(TOPIC, broker, broker) as addrs:
            admin = AdminClient(addrs.namesrv)
            try:
                return await call(admin)
            finally:
                await admin.close()

    return _run(scenario())


def test_good_bodies_still_read(two_masters: Any) -> None:
    stats = _admin_against(two_masters, RequestCode.GET_TOPIC_STATS_INFO, TOPIC_STATS % ("1", "5"),
                           lambda admin: admin.topic_stats(TOPIC))
    assert [(q.queue_id, q.max_offset) for q in stats] == [(0, 5), (0, 5)]  # one row from each master
    progress = _admin_against(two_masters, RequestCode.GET_CONSUME_STATS, CONSUME_STATS % ("5", "3"),
                              lambda admin: admin.consume_progress("g", TOPIC))
    assert {(q.broker_offset, q.consumer_offset) for q in progress.queues} == {(5, 3)}


@pytest.mark.parametrize("values", [('"abc"', "5"), ("1", "null"), ("1", '"5x"')])
def test_topic_stats_of_wrong_shape(two_masters: Any, values: tuple[str, str]) -> None:
    with pytest.raises(ClientError, match="GET_TOPIC_STATS_INFO"):
        _admin_against(two_masters, RequestCode.GET_TOPIC_STATS_INFO, TOPIC_STATS % values,
                       lambda admin: admin.topic_stats(TOPIC))


@pytest.mark.parametrize("values", [('"abc"', "3"), ("5", "null")])
def test_consume_progress_of_wrong_shape(two_masters: Any, values: tuple[str, str]) -> None:
    with pytest.raises(ClientError, match="GET_CONSUME_STATS"):
        _admin_against(two_masters, RequestCode.GET_CONSUME_STATS, CONSUME_STATS % values,
                       lambda admin: admin.consume_progress("g", TOPIC))


@pytest.mark.parametrize("version", ['"abc"', "null"])
def test_consumer_connections_of_wrong_shape(version: str) -> None:
    body = ('{"connectionSet":[{"clientAddr":"127.0.0.1:5000","clientId":"c1","language":"JAVA","version":'
            + version + '}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY",'
            '"messageModel":"CLUSTERING","subscriptionTable":{}}')
    with pytest.raises(ClientError, match="GET_CONSUMER_CONNECTION_LIST"):
        _connections(fastjson.loads(body.encode()))
