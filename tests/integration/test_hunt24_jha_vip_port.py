"""A broker on a configured listenPort also serves listenPort - 2 (the "VIP" port), as 4.9.3's does.

A Java 4.9.3 slave replicating from our master runs its SlaveSynchronize (GET_ALL_TOPIC_CONFIG,
GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG) against the master's
address with its port less 2 (BrokerOuterAPI asks MixAll.brokerVIPChannel(true, addr)).  With nothing on that
port its broker.log said, every 10 s, "SyncTopicConfig Exception, 127.0.0.1:35011 ... connect to
127.0.0.1:35009 failed" (captured from 4.9.3 against our master on 35011), and the Java slave never
learnt the master's topics, groups or consumer offsets."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from local_cluster import SMALL_STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import connect
from rocketstore.store.config import StoreConfig


def _free_port_pair() -> int:
    """A port P with P and P - 2 free just now (the broker's listenPort and its VIP port)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < 1026:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port - 2))
        except OSError:
            continue
        return port
    raise AssertionError("no free pair of ports")


async def _ask_topics(address: str) -> RemotingCommand:
    connection = await connect(address)
    try:
        return await connection.request(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), 5.0)
    finally:
        connection.close()


def test_the_vip_port_answers_a_java_slaves_config_sync(tmp_path: Path) -> None:
    async def scenario() -> tuple[RemotingCommand, RemotingCommand]:
        port = _free_port_pair()
        broker = Broker(BrokerConfig(broker_name="vip", listen_port=port, namesrv_addr="",
                                     listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=0),
                        StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE))
        await broker.start()
        try:
            return await _ask_topics(f"127.0.0.1:{port}"), await _ask_topics(f"127.0.0.1:{port - 2}")
        finally:
            await broker.close()

    main, vip = asyncio.run(scenario())
    assert vip.code == ResponseCode.SUCCESS == main.code
    assert json.loads(vip.body)["topicConfigTable"].keys() == json.loads(main.body)["topicConfigTable"].keys()


def test_a_broker_on_a_port_the_os_picks_has_no_vip_port(tmp_path: Path) -> None:
    async def scenario() -> bool:
        broker = Broker(BrokerConfig(broker_name="vip0", listen_port=0, namesrv_addr="",
                                     listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=0),
                        StoreConfig(store_path_root_dir=str(tmp_path / "store"), **SMALL_STORE))
        await broker.start()
        try:
            return broker._vip_listening
        finally:
            await broker.close()

    assert not asyncio.run(scenario())
