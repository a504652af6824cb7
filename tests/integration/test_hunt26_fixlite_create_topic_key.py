"""Producer(create_topic_key=..., default_topic_queue_nums=..., unit_name=...), 4.9.3's DefaultMQProducer
setCreateTopicKey / setDefaultTopicQueueNums and ClientConfig.setUnitName (hunt 26, fixlite).

Captured from 4.9.3 (a DefaultMQProducer with setUnitName("u1"), setCreateTopicKey("FixKey"),
setDefaultTopicQueueNums(2) sending to the new topic NewTopicJ, FixKey made with 8 queues and perm 7 on a
4.9.3 broker): its client id was ``192.0.2.2@8097#22915780808990@u1`` (what ``mqadmin producerConnection``
lists), its sends went to queues 0 and 1 only, and the broker created NewTopicJ with 2 read and 2 write queues
and perm 6 (FixKey's without PERM_INHERIT).  Ours had neither option: every send named TBW102 and 4.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster, producer_ids_on_loop, run_within

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.bodies import Perm

TEST_TIMEOUT_S = 30.0


def test_a_new_topic_is_made_after_the_create_topic_key_with_the_default_topic_queue_nums(
        tmp_path: Path) -> None:
    # no autoCreateTopicEnable: TBW102 cannot make topics, an inheritable template of the user's can
    with LocalCluster(tmp_path / "store", auto_create_topic_enable=False) as cluster:
        async def make_template() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.create_topic("FixKey", broker_addr=cluster.broker_addr, read_queue_nums=8,
                                         write_queue_nums=8, perm=Perm.INHERIT | Perm.READ | Perm.WRITE)

        run_within(make_template, TEST_TIMEOUT_S)
        cluster.wait_until(lambda: cluster.namesrv.routes.route("FixKey") is not None, 20.0, "FixKey's route")

        async def go() -> tuple[str, set[int]]:
            async with Producer(cluster.namesrv_addr, "fixlite-key-producer") as plain:
                with pytest.raises(NoRouteError):
                    await plain.send("NewTopicDefault", b"no template")
            async with Producer(cluster.namesrv_addr, "fixlite-key-producer", create_topic_key="FixKey",
                                default_topic_queue_nums=2, unit_name="u1") as producer:
                queues = {(await producer.send("NewTopicP", f"b{i}".encode())).message_queue.queue_id
                          for i in range(6)}
                # the broker's producer table knows it under that client id (its heartbeat)
                deadline = time.monotonic() + 10.0
                while producer.client_id not in cluster.call(
                        lambda: producer_ids_on_loop(cluster, "fixlite-key-producer")):
                    assert time.monotonic() < deadline, "no heartbeat under the client id"
                    await asyncio.sleep(0.05)
                return producer.client_id, queues

        client_id, queues = run_within(go, TEST_TIMEOUT_S)
        assert client_id.endswith("@u1") and client_id.count("@") == 2
        assert queues == {0, 1}
        created = cluster.call(lambda: cluster.broker.topics.table.get("NewTopicP"))
        assert created is not None
        assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (
            2, 2, Perm.READ | Perm.WRITE)
        assert cluster.call(lambda: cluster.broker.topics.table.get("NewTopicDefault")) is None

