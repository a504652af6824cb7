"""QUERY_CONSUME_QUEUE's filterData (mqadmin queryCq -g) for an online SQL92 group: 4.9.3's ConsumerFilterData
as fastjson's pretty text (``JSON.toJSONString(filterData, true)``), with the bloom filter bits of
``<group>#<topic>`` (positions from Guava's murmur3_128, worked out with Guava itself for the expected
text below); "null" for a TAG group.  Real Python push consumers against a real broker."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster
from test_python_push_consumer import FAST

from rocketstore.client import ConsumedMessage, ConsumeStatus, MessageSelector, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run

TOPIC = "CqFilterTopic"
SQL_GROUP = "cq-filter-sql"
TAG_GROUP = "cq-filter-tag"
EXPRESSION = "n > 1 AND kind = 'a\"b'"


def test_an_sql92_groups_filter_data_is_4_9_3s_consumer_filter_data_text(tmp_path: Path) -> None:
    began_ms = int(time.time() * 1000)
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        async def go() -> dict[str, Any]:
            async with Producer(cluster.namesrv_addr, "cq-filter-producer") as producer:
                await producer.send(TOPIC, b"m", properties={"n": "2"}, queue_id=0)
            # the consume queue the queries below read exists once the send is dispatched (a moment after its
            # answer): before, the broker answers that it does not exist
            await asyncio.to_thread(cluster.wait_dispatched)

            def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, SQL_GROUP, {TOPIC: MessageSelector.by_sql(EXPRESSION)},
                                    handle, **FAST), \
                    PushConsumer(cluster.namesrv_addr, TAG_GROUP, {TOPIC: "TagA"}, handle, **FAST), \
                    AdminClient(cluster.namesrv_addr) as admin:
                async def online(group: str) -> dict[str, Any]:
                    while True:
                        answer = await admin.query_consume_queue(cluster.broker_addr, TOPIC, 0, 0, 1, group)
                        if "subscriptionData" in answer:
                            return answer
                        await asyncio.sleep(0.1)

                answers = {group: await online(group) for group in (SQL_GROUP, TAG_GROUP)}
                # when the broker registered the expression (read on the broker's loop while the group is online)
                answers["born"] = await asyncio.get_running_loop().run_in_executor(None, cluster.call, lambda: (
                    cluster.broker.clients.group(SQL_GROUP).filter_born_ms[TOPIC]))  # type: ignore[union-attr]
                return answers

        answers = run(asyncio.wait_for(go(), 60))
        born_ms = answers["born"]
    assert began_ms <= born_ms <= int(time.time() * 1000)
    sql = answers[SQL_GROUP]
    version = sql["subscriptionData"]["subVersion"]
    assert sql["filterData"] == (
        '{\n\t"bloomFilterData":{\n\t\t"bitNum":112,\n\t\t"bitPos":[37,60,83]\n\t},\n'
        f'\t"bornTime":{born_ms},\n\t"clientVersion":{version},\n\t"consumerGroup":"{SQL_GROUP}",\n'
        '\t"dead":false,\n\t"deadTime":0,\n'
        '\t"expression":"n > 1 AND kind = \'a\\"b\'",\n\t"expressionType":"SQL92",\n'
        f'\t"topic":"{TOPIC}"\n}}')
    assert answers[TAG_GROUP]["filterData"] == "null"
