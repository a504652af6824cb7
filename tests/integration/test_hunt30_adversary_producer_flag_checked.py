"""``Producer.send(flag=...)`` refuses a flag that is no Java int before anything is sent.

Java's Message.setFlag takes an int, so 4.9.3's producer can send nothing else.  Ours sent whatever it was
given: the broker refused it with SYSTEM_ERROR (``header field 'h' is not a valid int``), after the
producer's retries, and a flag equal to an int (True, 1.0) left its text in that int's frame template, so
every later send of flag 1 to that queue was refused too (session 30 adversary).  Now TypeError (not an
int, a bool included) or ValueError (outside -2^31..2^31-1), and nothing goes out.  A batch message's
flag that cannot be encoded raised a bare struct.error; now the same TypeError / ValueError, naming it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, wait_stored

from rocketstore.client import Producer
from rocketstore.client.outgoing_message import OutgoingMessage
from rocketstore.remoting.transport import run


def test_a_flag_that_is_no_java_int_is_refused_before_sending(tmp_path: Path) -> None:
    topic = "Hunt30AdversaryFlag"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def traffic() -> None:
            async with Producer(cluster.namesrv_addr, "adversary-flag") as producer:
                for bad, error in ((True, TypeError), (1.0, TypeError), ("1", TypeError), (None, TypeError),
                                   (2**31, ValueError), (-(2**31) - 1, ValueError)):
                    with pytest.raises(error, match="flag"):
                        await producer.send(topic, b"bad", flag=bad, queue_id=0)  # type: ignore[arg-type]
                for bad, error in ((2**31, ValueError), (1.5, TypeError), (None, TypeError)):
                    with pytest.raises(error, match="message 1 of the batch: flag"):
                        batch = [OutgoingMessage(b"ok"), OutgoingMessage(b"bad", flag=bad)]  # type: ignore[arg-type]
                        await producer.send_batch(topic, batch, queue_id=0)
                # the refused True / 1.0 spoiled nothing: flag 1 goes out as 1
                await producer.send(topic, b"one", flag=1, queue_id=0)
                await producer.send(topic, b"lowest", flag=-(2**31), queue_id=0)

        run(traffic())
        stored = {m.body: m.flag for m in wait_stored(cluster, topic, 2, "the sends", queues=1)}
    assert stored == {b"one": 1, b"lowest": -(2**31)}
