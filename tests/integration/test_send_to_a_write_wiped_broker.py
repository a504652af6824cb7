"""A broker whose write permission was wiped (brokerPermission without W, as wipeWritePerm leaves it) still
stores what is sent to it (clients stay away by the route), except to an order topic: NO_PERMISSION with
4.9.3's msgCheck remark, as the name servers' ORDER_TOPIC_CONFIG marks such topics on the broker."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.headers import SendMessageRequestHeader
from rocketstore.remoting.transport import connect, run


def send(addr: str, topic: str) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="wiped-producer", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties=encode_properties({"UNIQ_KEY": "0A0B0C0D00002A9F00000000000000AA"}), reconsume_times=0,
        unit_mode=False, batch=False)

    async def go() -> RemotingCommand:
        conn = await connect(addr)
        try:
            return await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields_v2(),
                                                              b"body"), 5)
        finally:
            conn.close()

    return run(go())


def test_an_order_topic_is_refused_on_a_broker_that_is_not_writable(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def setup() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.create_topic("Ordered", broker_addr=cluster.broker_addr, read_queue_nums=2,
                                         write_queue_nums=2, order=True)
                await admin.create_topic("Unordered", broker_addr=cluster.broker_addr, read_queue_nums=2,
                                         write_queue_nums=2)

        run(setup())
        assert cluster.broker.registrar is not None
        cluster.run(cluster.broker.registrar.register_all())  # the name servers' order table marks "Ordered"
        assert cluster.call(lambda: cluster.broker.topics.get("Ordered")).order  # type: ignore[union-attr]
        assert send(cluster.broker_addr, "Ordered").code == ResponseCode.SUCCESS  # writable: taken
        async def wipe() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_broker_config({"brokerPermission": "4"}, broker_addr=cluster.broker_addr)

        run(wipe())  # read only, as mqadmin updateBrokerConfig -k brokerPermission -v 4 leaves it
        refused = send(cluster.broker_addr, "Ordered")
        assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION,
                                                  "the broker[127.0.0.1] sending message is forbidden")
        assert send(cluster.broker_addr, "Unordered").code == ResponseCode.SUCCESS
