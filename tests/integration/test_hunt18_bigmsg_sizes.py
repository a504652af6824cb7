"""Messages at the size limits, through a real broker and clients (hunt 18, big messages).

As RocketMQ 4.9.3: the producer measures a message's body against its maxMessageSize *before* compressing it
(Validators.checkMessage in sendDefaultImpl; tryToCompressMessage runs later, in sendKernelImpl), so an
incompressible body whose zlib form is a few bytes longer still goes out and the broker's own limit decides.
"""

from __future__ import annotations

import os
from pathlib import Path

from local_cluster import LocalCluster, pull_all

from rocketstore.client import Producer
from rocketstore.remoting.transport import run


def test_an_incompressible_body_at_the_producer_limit_is_sent_compressed(tmp_path: Path) -> None:
    body = os.urandom(8192)  # >= 4 KiB: compressed, and random bytes come out of zlib longer than 8192
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("BigIncompressible")

        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "big-producer", max_message_size=len(body)) as producer:
                return (await producer.send("BigIncompressible", body)).status

        assert run(send()) == "SEND_OK"
        stored = pull_all(cluster.namesrv_addr, "BigIncompressible", expected=1)
        assert [m.body for m in stored] == [body]
