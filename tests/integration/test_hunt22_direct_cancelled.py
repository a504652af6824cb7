"""CONSUME_MESSAGE_DIRECTLY to a handler that raises asyncio.CancelledError of its own (it awaited something
cancelled elsewhere) is answered THROW_EXCEPTION, as any exception of the handler; the error escaped the
consume-directly call, and the admin got no verdict."""

from __future__ import annotations

import asyncio

from local_cluster import LocalCluster
from test_python_push_consumer import FAST, arun, create_topic, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.consumer_bodies import CMResult


def test_a_directly_consumed_message_whose_handler_raises_cancelled_error_is_answered(
        cluster: LocalCluster) -> None:
    direct = asyncio.Event()

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        if direct.is_set():  # only the directly consumed call fails so
            future = asyncio.get_running_loop().create_future()
            future.cancel()
            await future
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, "DirectCancelT", 1)
        async with PushConsumer(cluster.namesrv_addr, "direct-cancel-group", {"DirectCancelT": "*"}, handle,
                                **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment("DirectCancelT")) == 1, 20, "the queue assigned")
            async with Producer(cluster.namesrv_addr, "direct-cancel-producer") as producer:
                sent = await producer.send("DirectCancelT", b"once")
            direct.set()
            result = await admin.consume_message_directly("direct-cancel-group", consumer.client_id,
                                                          sent.offset_msg_id)
            assert result.consume_result == CMResult.THROW_EXCEPTION
            assert result.remark is not None and "CancelledError" in result.remark

    arun(go)
