"""A BROADCASTING push consumer taking over the offsets directory of a 4.9.3 consumer that crashed while
replacing its offsets file resumes from ``offsets.json.bak``, as the 4.9.3 consumer itself does.

4.9.3 deletes ``offsets.json`` before renaming ``offsets.json.tmp`` in; a crash between leaves the ``.bak``
(the previous table) and the ``.tmp`` only.  The Python consumer read that as no offsets at all and started
at the queues' end (CONSUME_FROM_LAST_OFFSET, the default): everything after the ``.bak``'s offsets was
skipped.  Checked against 4.9.3: its consumer logs "load consumer's offset" with the ``.bak``'s offsets and
consumes from them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import FAST, arun, create_topic, eventually

from rocketstore.client import (
    ConsumedMessage,
    ConsumeStatus,
    MessageModel,
    Producer,
    PullConsumer,
    PushConsumer,
)


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def _java_table(offsets: dict[tuple[str, str, int], int]) -> str:
    """A table as 4.9.3's OffsetSerializeWrapper.toJson(true) writes it (tabs, MessageQueue object keys)."""
    entries = ",".join(
        f'{{\n\t\t\t"brokerName":"{broker}",\n\t\t\t"queueId":{queue},'
        f'\n\t\t\t"topic":"{topic}"\n\t\t}}:{offset}'
        for (topic, broker, queue), offset in offsets.items())
    return '{\n\t"offsetTable":{' + entries + "\n\t}\n}"


def test_a_broadcasting_consumer_resumes_from_the_bak_left_by_a_java_crash(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "Hunt27JbroadBakResume", "hunt27-jbroad-bak-resume"
    got: list[str] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.body.decode() for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, topic, queue_count=2)
        async with Producer(cluster.namesrv_addr, "hunt27-jbroad-producer") as producer:
            for i in range(6):  # offsets 0, 1, 2 on each queue
                await producer.send(topic, f"m{i}".encode(), queue_id=i % 2)
        # every message in its queue before the first pull: a pull at offset 1 of a queue the dispatcher had
        # not reached yet (a loaded machine) was corrected to the queue's end, 0, and delivered m1
        await asyncio.to_thread(cluster.wait_dispatched)
        async with PullConsumer(cluster.namesrv_addr, "hunt27-jbroad-admin") as admin:
            queues = await admin.queues(topic)
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle,
                                message_model=MessageModel.BROADCASTING, offset_dir=str(tmp_path / "offsets"),
                                **FAST)
        folder = tmp_path / "offsets" / consumer.client_id / group
        folder.mkdir(parents=True)
        # the crash: no offsets.json; the previous table (offset 1 of each queue) and the new one (offset 2)
        keys = [(q.topic, q.broker_name, q.queue_id) for q in queues]
        (folder / "offsets.json.bak").write_text(_java_table(dict.fromkeys(keys, 1)))
        (folder / "offsets.json.tmp").write_text(_java_table(dict.fromkeys(keys, 2)))
        async with consumer:
            await eventually(lambda: len(got) >= 4, 20, "the messages after the .bak's offsets")
            await asyncio.sleep(0.3)  # room for anything wrongly delivered
        assert Counter(got) == Counter(["m2", "m3", "m4", "m5"])

    arun(go)
