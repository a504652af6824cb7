"""The official C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq 1.x) sends a message whose key is GBK bytes,
not UTF-8: it writes them raw into its JSON header.  A 4.9.3 broker reads the header through
``new String(data, UTF_8)`` (malformed bytes become U+FFFD) and stores the message; the broker here closed
the connection on the malformed UTF-8, so the producer lost its connection on every such send and failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cpp_driver import requires_cpp_client
from local_cluster import LocalCluster, pull_all

pytestmark = requires_cpp_client

GBK_KEY = "\u4f60\u597d".encode("gbk")

PRODUCER = r'''
import json, os, sys
from rocketmq.client import Message, Producer
producer = Producer("raw-key-producer", timeout=5000)
producer.set_namesrv_addr(sys.argv[1])
producer.start()
for i, key in enumerate((b"plain-key", bytes.fromhex(sys.argv[3]), b"after")):
    message = Message(sys.argv[2])
    message.set_keys(key)
    message.set_tags(b"T")
    message.set_body(b"body-%d" % i)
    try:
        result = producer.send_sync(message)
        print(json.dumps({"i": i, "status": str(result.status), "offset": result.offset}), flush=True)
    except Exception as exc:
        print(json.dumps({"i": i, "error": repr(exc)[:300]}), flush=True)
os._exit(0)
'''


def test_a_cpp_producer_sending_a_gbk_key_is_served_and_the_message_stored(tmp_path: Path) -> None:
    script = tmp_path / "raw_key_producer.py"
    script.write_text(PRODUCER, encoding="utf-8")
    topic = "RawKeyTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        done = subprocess.run([sys.executable, str(script), cluster.namesrv_addr, topic, GBK_KEY.hex()],
                              check=False, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HOME": str(tmp_path)})
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert [line.get("status") for line in lines] == ["0", "0", "0"], (lines, done.stderr[-2000:])
        assert [line["offset"] for line in lines] == [0, 1, 2]
        cluster.wait_until(lambda: cluster.broker.store.max_offset(topic, 0) == 3, 10, "three messages")
        stored = sorted(pull_all(cluster.namesrv_addr, topic), key=lambda m: m.queue_offset)
        assert [m.body for m in stored] == [b"body-0", b"body-1", b"body-2"]
        assert stored[0].keys == "plain-key" and stored[2].keys == "after"
        assert stored[1].keys and set(stored[1].keys) == {"\ufffd"}  # as 4.9.3 stores it
