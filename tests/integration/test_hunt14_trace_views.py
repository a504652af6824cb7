"""Message trace details checked against RocketMQ 4.9.3 (hunt 14, area trace): what a trace query shows
as the client host, and the body length a Pub of an orderly send records."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, run_within
from serve_process import cli

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.client.trace import TraceType
from rocketstore.client.trace_query import MessageTrace

WAIT_S = 30.0


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, 90.0)  # type: ignore[arg-type]


async def wait_for_pub(namesrv: str, msg_id: str) -> MessageTrace:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    async with AdminClient(namesrv) as admin:
        while True:
            try:
                trace = await admin.query_message_trace(msg_id)
                if any(v.context.trace_type is TraceType.Pub for v in trace.views):
                    return trace
            except NoRouteError:
                pass
            if loop.time() > deadline:
                raise AssertionError(f"no Pub record of {msg_id}")
            await asyncio.sleep(0.1)


def test_the_client_host_of_a_trace_record_is_the_ip_without_port_as_mqadmin_shows_it(tmp_path: Path) -> None:
    # 4.9.3's TraceView takes the trace message's getBornHostString(): the address only, no port
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "hunt14-host-pg", enable_trace=True) as producer:
                return (await producer.send("Hunt14HostTopic", b"hello")).msg_id

        msg_id = arun(send)
        trace = arun(lambda: wait_for_pub(cluster.namesrv_addr, msg_id))
        assert [v.client_host for v in trace.views] == ["127.0.0.1"]

        table = cli("trace", msg_id, "--namesrv", cluster.namesrv_addr)
        assert table.returncode == 0, table.stderr
        rows = [line.split() for line in table.stdout.splitlines() if line.strip()]
        assert rows[1][0] == "Pub" and rows[1][2] == "127.0.0.1", table.stdout


def test_an_orderly_send_of_a_compressed_body_records_the_compressed_length(tmp_path: Path) -> None:
    # 4.9.3 compresses in sendKernelImpl before the send hook reads getBody().length, for every send path
    body = b"orderly trace body " * 400  # 7,600 bytes: over compressMsgBodyOverHowmuch (4 KiB)
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> tuple[str, str, int]:
            async with Producer(cluster.namesrv_addr, "hunt14-orderly-pg", enable_trace=True) as producer:
                plain = await producer.send("Hunt14OrderlyTopic", body)
                orderly = await producer.send_orderly("Hunt14OrderlyTopic", body, "shard-1")
                return plain.msg_id, orderly.msg_id, len(zlib.compress(body, producer.compress_level))

        plain_id, orderly_id, compressed = arun(send)
        assert compressed < len(body)
        for msg_id in (plain_id, orderly_id):
            trace = arun(lambda m=msg_id: wait_for_pub(cluster.namesrv_addr, m))
            [pub] = [v for v in trace.views if v.context.trace_type is TraceType.Pub]
            assert pub.bean.body_length == compressed, msg_id


def test_tags_and_keys_given_as_properties_are_the_pubs_as_they_are_the_messages(tmp_path: Path) -> None:
    # Java's hook reads msg.getTags() / getKeys(), the TAGS / KEYS the message goes out with; a send given
    # them in *properties* stores them, so its Pub (and the trace message's keys) carries them too
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "hunt14-props-pg", enable_trace=True) as producer:
                return (await producer.send("Hunt14PropsTopic", b"body",
                                            properties={"KEYS": "prop-key-1 prop-key-2", "TAGS": "PropTag"})).msg_id

        msg_id = arun(send)
        trace = arun(lambda: wait_for_pub(cluster.namesrv_addr, msg_id))
        [pub] = [v for v in trace.views if v.context.trace_type is TraceType.Pub]
        assert (pub.bean.tags, pub.bean.keys) == ("PropTag", "prop-key-1 prop-key-2")

        async def by_key() -> list[Any]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.query_by_key("RMQ_SYS_TRACE_TOPIC", "prop-key-2")

        assert [m.msg_id for m in arun(by_key)] == [pub.trace_msg_id]
