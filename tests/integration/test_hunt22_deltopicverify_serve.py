"""``rocketstore store verify`` on a real broker's store after ``rocketstore topic delete`` (session 22's hunt).

4.9.3's DELETE_TOPIC_IN_BROKER takes the topic out of topics.json and drops its consume queues
(cleanUnusedTopic); its records stay in the commitlog until retention.  Verify must not take them for damage
(a healthy store verified as damaged), nor the old records of a topic created again (its queues restart at
queue offset 0), and must still report a live topic's lost consume queue.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.client import Producer
from rocketstore.remoting.transport import run

TEST_TIMEOUT_S = 90.0


def _send(namesrv: str, counts: dict[str, int]) -> None:
    """*counts[topic]* messages to each topic in turn (auto-created by the first send: 4 queues), round robin.

    A deleted topic's records are sent before the others': a store opened re-dispatches from the end of the
    newest consume-queue entry (4.9.3's reputFromOffset), which would give records past it their queues
    again (as a 4.9.3 broker restarted does)."""
    async def go() -> None:
        async with Producer(namesrv, "deltopic-producer") as producer:
            for topic, n in counts.items():
                for i in range(n):
                    result = await producer.send(topic, f"{topic}-{i}".encode(), keys=f"{topic}-key-{i}")
                    assert result.status == "SEND_OK"

    run(asyncio.wait_for(go(), TEST_TIMEOUT_S))


def _delete_topic(namesrv: str, topic: str) -> None:
    done = cli("topic", "delete", topic, "-n", namesrv)
    assert done.returncode == 0, done.stderr[-2000:]


def _verify(store: Path, conf: Path) -> tuple[int, str]:
    out = cli("store", "verify", str(store), "-c", str(conf))
    return out.returncode, out.stdout + out.stderr


def test_verify_after_topic_delete_is_ok_and_counts_the_deleted_topics_records(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    store = tmp_path / "store"
    with ServeProcess(store, conf) as serve:
        _send(serve.namesrv_addr, {"GoneTopic": 8, "KeptTopic": 6})
        _delete_topic(serve.namesrv_addr, "GoneTopic")
        assert serve.terminate() == 0
    assert not (store / "consumequeue" / "GoneTopic").exists()
    status, text = _verify(store, conf)
    assert status == 0, text
    assert "deleted topics:   8 records of GoneTopic left" in text, text
    assert "OK:" in text


def test_verify_after_a_topic_is_deleted_and_created_again_is_ok(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    store = tmp_path / "store"
    with ServeProcess(store, conf) as serve:
        _send(serve.namesrv_addr, {"AgainTopic": 8})
        _delete_topic(serve.namesrv_addr, "AgainTopic")
        # a new producer finds no route: its first send auto-creates the topic anew, its queues from 0; 3
        # messages leave one of the 4 new queues without any (its old records have no queue at all)
        _send(serve.namesrv_addr, {"AgainTopic": 3})
        assert serve.terminate() == 0
    status, text = _verify(store, conf)
    assert status == 0, text
    assert "deleted topics:   8 records of AgainTopic left" in text, text


def test_verify_still_reports_a_live_topics_lost_consume_queue(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    store = tmp_path / "store"
    with ServeProcess(store, conf) as serve:
        _send(serve.namesrv_addr, {"GoneTopic": 4, "LiveTopic": 8, "TailTopic": 1})
        _delete_topic(serve.namesrv_addr, "GoneTopic")
        assert serve.terminate() == 0
    shutil.rmtree(store / "consumequeue" / "LiveTopic" / "1")
    status, text = _verify(store, conf)
    assert status == 1, text
    assert "RECORD_NOT_IN_CQ at commitlog@" in text and "LiveTopic/1 has no consume queue" in text, text
    assert "by kind: RECORD_NOT_IN_CQ 2" in text, text
    assert "deleted topics:   4 records of GoneTopic left" in text, text
