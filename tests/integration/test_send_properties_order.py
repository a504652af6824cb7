"""The properties string the broker stores for a sent message, in the order a 4.9.3 broker writes it.

4.9.3's send path parses the request's properties into a HashMap, adds CLUSTER, then drops WAIT before it
serialises the map.  With 12 entries and WAIT, CLUSTER is the 13th entry and doubles the table to 32
buckets, which dropping WAIT does not undo: the expected order below is what java.util.HashMap (Java 17)
printed for exactly these puts and that remove."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.message.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, encode_properties
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import connect, run

#: java.util.HashMap: put KEYS, UNIQ_KEY, TAGS, WAIT, p1..p8, then put CLUSTER, remove WAIT; keySet order
JAVA_ORDER = ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "KEYS", "UNIQ_KEY", "CLUSTER", "TAGS"]


def test_a_send_whose_cluster_entry_grew_the_map_is_stored_in_the_bigger_tables_order(tmp_path: Path) -> None:
    props = {"KEYS": "k", "UNIQ_KEY": "U1", "TAGS": "T", "WAIT": "true", **{f"p{i}": "v" for i in range(1, 9)}}
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> RemotingCommand:
            conn = await connect(cluster.broker_addr)
            try:
                ext = {"a": "order-group", "b": "OrderedProps", "c": "TBW102", "d": "4", "e": "0", "f": "0",
                       "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0",
                       "k": "false", "m": "false"}
                return await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"body"), 5)
            finally:
                conn.close()

        answer = run(send())
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        cluster.wait_dispatched()
        [stored] = cluster.call(lambda: cluster.broker.store.get("OrderedProps", 0, 0, 10).messages)
    names = [item.split(NAME_VALUE_SEPARATOR, 1)[0] for item in stored.properties_string.split(PROPERTY_SEPARATOR)]
    assert names == JAVA_ORDER
