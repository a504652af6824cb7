"""A lone surrogate or an unknown enum name in a request header, on a raw socket against a real name server
and broker.

JSON allows ``"\\ud800"`` escapes that decode to no Unicode scalar; Java's fastjson keeps such a value in a
String and writes it as ``?`` (String.getBytes(UTF_8)).  A name server that stored one in its KV table
must keep answering for that table and keep writing kvConfig.json: one request must not poison it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.namesrv import NameServer, NamesrvConfig
from rocketstore.remoting import FrameDecoder, RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import run

DEADLINE_S = 10.0
LONE = "\ud800"


def raw_request(sock: socket.socket, decoder: FrameDecoder, opaque: int, code: int,
                ext: dict[str, str]) -> RemotingCommand:
    """One request whose JSON header is written with \\u escapes (as json.dumps does by default), so a lone
    surrogate travels as the six characters a buggy or hostile client would send."""
    header = json.dumps({"code": code, "extFields": ext, "flag": 0, "language": "JAVA", "opaque": opaque,
                         "version": 395}).encode("ascii")
    sock.sendall(struct.pack(">iI", 4 + len(header), len(header)) + header)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answer = decoder.next_command()
        if answer is not None:
            assert answer.opaque == opaque, answer
            return answer
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        data = sock.recv(65536)
        assert data, f"the name server closed the connection instead of answering code {code}"
        decoder.feed(data)


def test_a_kv_value_with_a_lone_surrogate_does_not_break_the_kv_table(tmp_path: Path) -> None:
    kv_path = tmp_path / "kvConfig.json"
    config = NamesrvConfig(kv_config_path=str(kv_path), config_store_path=str(tmp_path / "namesrv.properties"))

    def client(address: str) -> None:
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as sock:
            decoder = FrameDecoder()
            odd = raw_request(sock, decoder, 1, RequestCode.PUT_KV_CONFIG,
                              {"namespace": "ns", "key": "k" + LONE, "value": "v" + LONE})
            assert odd.code == ResponseCode.SUCCESS, odd.remark
            listed = raw_request(sock, decoder, 2, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
            assert listed.code == ResponseCode.SUCCESS, listed.remark
            assert json.loads(listed.body) == {"table": {"k?": "v?"}}
            # a well-formed write after it is answered and reaches the file
            good = raw_request(sock, decoder, 3, RequestCode.PUT_KV_CONFIG,
                               {"namespace": "ORDER_TOPIC_CONFIG", "key": "OrderTopic", "value": "broker-a:4"})
            assert good.code == ResponseCode.SUCCESS, good.remark

    async def serve_one_client() -> None:
        namesrv = NameServer(config)
        await namesrv.start("127.0.0.1", 0)
        try:
            await asyncio.to_thread(client, namesrv.address)  # a blocking client beside the server's loop
        finally:
            await namesrv.close()

    run(serve_one_client())
    on_disk = json.loads(kv_path.read_text(encoding="utf-8"))
    assert on_disk == {"configTable": {"ns": {"k?": "v?"}, "ORDER_TOPIC_CONFIG": {"OrderTopic": "broker-a:4"}}}
    # and a name server starts again from that file
    assert NameServer(config).kv.get("ORDER_TOPIC_CONFIG", "OrderTopic") == "broker-a:4"


def test_a_topic_filter_type_java_has_no_enum_for_is_refused_and_topics_json_stays_writable(
        tmp_path: Path) -> None:
    """4.9.3 checks topicFilterType against TopicFilterType (SYSTEM_ERROR "value invalid"); one that was
    stored instead, with a lone surrogate in it, made every later write of topics.json fail."""
    store = tmp_path / "store"

    def create(sock: socket.socket, decoder: FrameDecoder, opaque: int, topic: str,
               filter_type: str) -> RemotingCommand:
        return raw_request(sock, decoder, opaque, RequestCode.UPDATE_AND_CREATE_TOPIC,
                           {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                            "perm": "6", "topicFilterType": filter_type, "topicSysFlag": "0", "order": "false"})

    with LocalCluster(store) as cluster:
        host, port = cluster.broker_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as sock:
            decoder = FrameDecoder()
            for opaque, filter_type in enumerate(["SINGLE_TAG" + LONE, "FOO", "single_tag", ""], start=1):
                refused = create(sock, decoder, opaque, f"Odd{opaque}", filter_type)
                assert refused.code == ResponseCode.SYSTEM_ERROR, (filter_type, refused.remark)
                assert "topicFilterType" in (refused.remark or ""), refused.remark
            created = create(sock, decoder, 10, "Fine", "MULTI_TAG")
            assert created.code == ResponseCode.SUCCESS, created.remark
        assert not any(cluster.call(lambda: [t.topic_name.startswith("Odd") for t in cluster.broker.topics]))
    on_disk = json.loads((store / "config" / "topics.json").read_text(encoding="utf-8"))["topicConfigTable"]
    assert on_disk["Fine"]["topicFilterType"] == "MULTI_TAG"
    assert not [name for name in on_disk if name.startswith("Odd")]
