"""A delayed message keeps WAIT in the record the broker schedules, and so in the one it delivers.

4.9.3's send path leaves WAIT=true out of a stored message's properties, but puts it back into the map
before the store moves a delayed message to SCHEDULE_TOPIC_XXXX, and there the store serialises that map
again (REAL_TOPIC, REAL_QID added).  A 4.9.3 push consumer of a DELAY=1 message sent by the 4.9.3 Java
client to a 4.9.3 broker saw (captured, UNIQ_KEY and the consumer's own entries left out):
DELAY=1, KEYS=dk, REAL_QID=2, REAL_TOPIC=T1, TAGS=TagD, WAIT=true, CLUSTER=DefaultCluster.  A message
without a delay level is stored without WAIT, as before."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.message.properties import encode_properties, parse_properties
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import connect, run
from rocketstore.store.dispatch import SCHEDULE_TOPIC


def _send(cluster: LocalCluster, props: dict[str, str]) -> RemotingCommand:
    async def send() -> RemotingCommand:
        conn = await connect(cluster.broker_addr)
        try:
            ext = {"a": "delay-group", "b": "DelayWait", "c": "TBW102", "d": "4", "e": "2", "f": "0",
                   "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0",
                   "k": "false", "m": "false"}
            return await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"d1"), 5)
        finally:
            conn.close()

    return run(send())


def test_a_delayed_message_is_scheduled_with_wait_and_a_plain_one_without(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        delayed = _send(cluster, {"DELAY": "1", "KEYS": "dk", "UNIQ_KEY": "U1", "TAGS": "TagD", "WAIT": "true"})
        assert delayed.code == ResponseCode.SUCCESS, delayed.remark
        plain = _send(cluster, {"KEYS": "pk", "UNIQ_KEY": "U2", "TAGS": "TagP", "WAIT": "true"})
        assert plain.code == ResponseCode.SUCCESS, plain.remark
        cluster.wait_dispatched()
        [scheduled] = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 0, 0, 10).messages)
        [stored] = cluster.call(lambda: cluster.broker.store.get("DelayWait", 2, 0, 10).messages)
    assert parse_properties(scheduled.properties_string) == {
        "DELAY": "1", "KEYS": "dk", "UNIQ_KEY": "U1", "TAGS": "TagD", "WAIT": "true", "CLUSTER": "DefaultCluster",
        "REAL_TOPIC": "DelayWait", "REAL_QID": "2"}
    assert "WAIT" not in parse_properties(stored.properties_string)
