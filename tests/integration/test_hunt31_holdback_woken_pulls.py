"""Long-polled pulls woken while their consumer reads none of its answers wait their turn too.

A consumer parks one pull per queue; messages then arrive on every queue while it reads nothing: each woken
pull read its messages and queued its answer at once, so a connection with 24 parked pulls of 1 MB answers
held ~20 MB of them unwritten (held-back requests are served one at a time once the peer reads, see
test_hunt31_holdback_slow_reader.py; a woken pull was let through unheld).  4.9.3 queues them all.
Now the woken pulls wait as held-back requests do, and the consumer still gets every answer when it reads.
Waits on conditions only; never times anything.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from raw_frames import RawConnection

from rocketstore.remoting import FrameDecoder
from rocketstore.remoting.codes import RequestCode, ResponseCode
from tests.integration.local_cluster import LocalCluster

TOPIC = "HoldbackWoken"
QUEUES = 24
BODY = b"w" * (1 << 20)


def _pull_frame(queue_id: int, opaque: int) -> bytes:
    ext = {"consumerGroup": "holdback_woken", "topic": TOPIC, "queueId": str(queue_id), "queueOffset": "0",
           "maxMsgNums": "1", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "60000",
           "subVersion": "0", "expressionType": "TAG", "subscription": "*"}
    header = json.dumps({"code": RequestCode.PULL_MESSAGE, "flag": 0, "language": "JAVA", "opaque": opaque,
                         "version": 395, "extFields": ext}).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header


def _until(condition: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_pulls_woken_while_the_consumer_reads_nothing_are_held_back(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, QUEUES)
        broker = cluster.broker
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # holds little of what it does not read
        producer = RawConnection(cluster.broker_addr)
        try:
            sock.connect(("127.0.0.1", broker.port))
            sock.sendall(b"".join(_pull_frame(q, 1 + q) for q in range(QUEUES)))
            _until(lambda: cluster.call(lambda: broker.pull_hold.waiting_count) == QUEUES, "the pulls to park")
            for q in range(QUEUES):
                ext = {"producerGroup": "holdback_woken_p", "topic": TOPIC, "defaultTopic": "TBW102",
                       "defaultTopicQueueNums": "4", "queueId": str(q), "sysFlag": "0",
                       "bornTimestamp": "1700000000000", "flag": "0", "properties": "", "reconsumeTimes": "0",
                       "unitMode": "false", "batch": "false"}
                assert producer.request(RequestCode.SEND_MESSAGE, ext, BODY).code == ResponseCode.SUCCESS
            _until(lambda: cluster.call(lambda: broker.pull_hold.waiting_count) == 0, "the pulls to wake")
            (conn,) = [c for c in cluster.call(lambda: list(broker.server.connections))
                       if c.peer[1] == sock.getsockname()[1]]
            _until(lambda: cluster.call(lambda: conn._writing_paused), "the writes to stop")
            for _ in range(5):  # a few turns of the broker's loop for the woken pulls to run
                buffered = cluster.call(lambda: conn._transport.get_write_buffer_size())
            # one answer let through at a time (plus the high-water mark); all 24 queued: ~20 MB
            assert buffered < 3 * len(BODY), f"{buffered} bytes of answers queued"

            decoder = FrameDecoder()
            answers = {}
            sock.settimeout(30)
            while len(answers) < QUEUES:
                data = sock.recv(1 << 20)
                assert data, "the broker closed the connection"
                decoder.feed(data)
                while (answer := decoder.next_command()) is not None:
                    answers[answer.opaque] = answer
            assert sorted(answers) == list(range(1, QUEUES + 1))
            assert all(a.code == ResponseCode.SUCCESS and BODY in a.body for a in answers.values())
        finally:
            producer.close()
            sock.close()
