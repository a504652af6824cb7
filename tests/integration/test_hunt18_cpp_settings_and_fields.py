"""The parts of the official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4) the other C++ tests leave alone,
against our name server and broker: a name server found through an address URL (set_namesrv_domain), instance
names, log, timeout, compression and thread settings, send_oneway_orderly, bodies set as raw bytes
(SetByteMessageBody), the stored-message fields a consumer reads (store size, timestamps, commit log offset,
delay level, prepared transaction offset), a body past the broker's size limit, and the PullConsumer started
past offset 0.

The client runs in subprocesses (cpp_client_runner.py, settings from RMQ_* variables); skipped only when the
wheel cannot be imported here.
"""

from __future__ import annotations

import http.server
import logging
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster, acl_home, wait_stored
from test_acl_cpp_client import ACL_FILE

from rocketstore.message.record import StoredMessage

pytestmark = requires_cpp_client

QUEUES = 4  # the broker's default queue count for an auto-created topic
RAW_TAIL = bytes([0, 0xFF, 0, 1, 0x80])  # NULs and bytes that are not UTF-8


def body_of(i: int) -> str:
    return f"body-{i} ünï"


@contextmanager
def address_server(namesrv_addr: str) -> Iterator[tuple[str, list[str]]]:
    """An HTTP name server address server (what set_namesrv_domain points at): every GET answers
    *namesrv_addr*; yields its URL and the paths asked for.  The whole response goes out in one write: the
    0.4.4 client keeps only the body bytes that arrived with the headers (the rest it prints to stdout)."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            asked.append(self.path)
            payload = namesrv_addr.encode()
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="nsaddr-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/rocketmq/nsaddr", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def run_to_done(namesrv: str, home: Path, args: list[str], what: str, env: dict[str, str] | None = None
                ) -> list[dict[str, Any]]:
    """Run a producing or pulling command of the runner until its {"done": true} (or its error line); every
    line it wrote."""
    runner = Runner([args[0], namesrv, *args[1:]], home, env)
    try:
        runner.collect_until(lambda seen: any(s.get("done") for s in seen), 90, what)
        runner.wait(10)
    finally:
        runner.kill()
    return runner.seen


def fields_of(line: dict[str, Any]) -> tuple[int, ...]:
    return (line["queue_id"], line["queue_offset"], line["store_size"], line["born_timestamp"],
            line["store_timestamp"], line["commit_log_offset"], line["prepared_transaction_offset"])


def stored_fields(m: StoredMessage) -> tuple[int, ...]:
    return (m.queue_id, m.queue_offset, m.store_size, m.born_timestamp, m.store_timestamp, m.commit_log_offset,
            m.prepared_transaction_offset)


def test_cpp_settings_oneway_orderly_raw_bodies_and_the_fields_a_consumer_reads(tmp_path: Path) -> None:
    """Producer and consumers find the name server only through the address URL; oneway-orderly sends land in
    the queue the selector chose (i % 4) with their raw bytes intact; the push consumer (instance name, two
    threads, batches of 4) is known to the broker by ``...@instance`` and reads every stored field as stored;
    a delayed message (its body compressed) reaches it with delay level 1 (4.9.3 writes the delivered record's properties before it
    clears DELAY from the map, so the record keeps it); the PullConsumer started at offset 1 gets only the
    messages from offset 1 on."""
    topic, count = "Hunt18CppFieldsTopic", 8
    logs = tmp_path / "client-logs"
    settings = {"RMQ_INSTANCE_NAME": "hunt18-producer", "RMQ_LOG_PATH": str(logs), "RMQ_LOG_LEVEL": "4",
                "RMQ_SEND_TIMEOUT_MS": "8000", "RMQ_COMPRESS_LEVEL": "9"}
    with LocalCluster(tmp_path / "store") as cluster, address_server(cluster.namesrv_addr) as (url, asked):
        seen = run_to_done(url, tmp_path / "p", ["produce", topic, "hunt18-cpp-producer", str(count), "--mode",
                                                 "oneway-orderly", "--raw-tail", RAW_TAIL.hex()],
                           "the oneway-orderly sends", settings)
        assert [s["status"] for s in seen if "status" in s] == ["ONEWAY"] * count
        assert asked, "the producer asked the address server for the name server"
        stored = sorted(wait_stored(cluster, topic, count, "the oneway-orderly sends"), key=lambda m: m.body)
        by_number = {int(m.body.split(b" ")[0].split(b"-")[1]): m for m in stored}
        assert sorted(by_number) == list(range(count))
        for i, m in by_number.items():
            assert m.body == body_of(i).encode() + RAW_TAIL, "the raw bytes are stored as set"
            assert m.queue_id == i % QUEUES, "the hashing selector's queue"
            assert m.properties.get("KEYS") == f"key-{i}" and m.properties.get("TAGS") in ("TagA", "TagB")

        # one delayed message (level 1: 1 s) for the consumer too, its small body compressed (threshold 0)
        delayed = run_to_done(url, tmp_path / "p", ["produce", topic, "hunt18-cpp-producer", "1", "--first",
                                                    str(count), "--delay", "1"], "the delayed send",
                              {"RMQ_COMPRESS_OVER": "0"})
        assert [s["status"] for s in delayed if "status" in s] == ["OK"]

        group = "hunt18-cpp-fields-group"
        consumer = Runner(["consume", url, topic, group], tmp_path / "c",
                          {"RMQ_INSTANCE_NAME": "hunt18-consumer", "RMQ_THREAD_COUNT": "2", "RMQ_BATCH_MAX": "4",
                           "RMQ_LOG_PATH": str(logs), "RMQ_LOG_LEVEL": "4"})
        try:
            consumer.collect_until(lambda seen: len({m["body"] for m in messages(seen)}) >= count + 1, 60,
                                   "every message pushed")
            ids = cluster.call(lambda: cluster.broker.clients.consumer_ids(group))
            consumer.stop()
        finally:
            consumer.kill()
        assert len(ids) == 1 and ids[0].endswith("@hunt18-consumer"), ids

        stored = wait_stored(cluster, topic, count + 1, "the oneway-orderly and the delayed sends")
        bodies = {m.commit_log_offset: zlib.decompress(m.body) if m.sys_flag & 1 else m.body for m in stored}
        by_body = {bodies[m.commit_log_offset].split(b"\x00")[0].decode(): m  # the wheel reads up to a NUL
                   for m in stored}
        assert by_body[body_of(count)].sys_flag & 1, "stored compressed, as sent"
        got = {m["body"]: m for m in messages(consumer.seen)}
        assert sorted(got) == sorted(by_body)
        for body, line in got.items():
            assert fields_of(line) == stored_fields(by_body[body]), body
            assert line["delay_time_level"] == (1 if body == body_of(count) else 0), body
            assert line["topic"] == topic and line["reconsume_times"] == 0
        assert by_body[body_of(count)].properties.get("DELAY") == "1", "4.9.3's delivered record keeps DELAY"

        pulled = run_to_done(url, tmp_path / "pull", ["pull", topic, "hunt18-cpp-pull-group", "*", "--from", "1"],
                             "the pull from offset 1")
        pulled_msgs = messages(pulled)
        want = sorted(b for b, m in by_body.items() if m.queue_offset >= 1)
        assert sorted(m["body"] for m in pulled_msgs) == want, "only the messages from offset 1 on"
        for line in pulled_msgs:
            assert fields_of(line) == stored_fields(by_body[line["body"]])


def test_cpp_body_past_the_broker_limit_is_refused_and_the_next_send_stored(tmp_path: Path) -> None:
    """A producer allowed 16 MiB sends a body that is still over 4 MiB after the client's zlib compression: the
    broker refuses it with 4.9.3's MESSAGE_ILLEGAL (code 13, which the client logs; it retries, then raises
    "No route info") and stores nothing; a normal send after it is stored."""
    topic = "Hunt18CppBigTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        seen = run_to_done(cluster.namesrv_addr, tmp_path, ["produce", topic, "hunt18-cpp-big", "1", "--first",
                                                            "1", "--tags", "Small"], "the topic's first send")
        assert [s["status"] for s in seen if "status" in s] == ["OK"]
        big_home = tmp_path / "big"
        big = Runner(["produce", cluster.namesrv_addr, topic, "hunt18-cpp-big", "1", "--noise", str(8 << 20)],
                     big_home, {"RMQ_MAX_MESSAGE_SIZE": str(16 << 20)})
        try:
            big.wait(60)
        finally:
            big.kill()
        errors = [s["error"] for s in big.seen if "error" in s]
        assert errors and [s for s in big.seen if "status" in s] == [], big.seen
        after = run_to_done(cluster.namesrv_addr, tmp_path, ["produce", topic, "hunt18-cpp-big", "1", "--first",
                                                             "2", "--tags", "Small"], "a send after the refusal")
        assert [s["status"] for s in after if "status" in s] == ["OK"]
        stored = wait_stored(cluster, topic, 2, "the two small sends")
        assert sorted(m.body.decode() for m in stored) == [body_of(1), body_of(2)]
    client_log = "".join(f.read_text(errors="replace") for f in (big_home / "logs").rglob("*.log*"))
    assert "error code:13" in client_log and "msg body length limit" in client_log, errors


def test_signed_cpp_pull_consumer_from_an_offset_and_a_wrong_secret_refused(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The PullConsumer signs its route and pull requests (set_session_credentials): with the right secret it
    gets the messages from offset 1 on; with a wrong one the broker refuses its pulls (the broker logs why;
    the 0.4.4 wheel's pull() then retries for ever, so the run is killed once the refusal is seen)."""
    caplog.set_level(logging.INFO, logger="rocketstore.broker.broker")
    home = acl_home(tmp_path / "home", ACL_FILE)
    good = {"RMQ_ACCESS_KEY": "rocketstore-app", "RMQ_SECRET_KEY": "s3cret-key-1"}
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        sent = run_to_done(cluster.namesrv_addr, tmp_path / "p", ["produce", "AclTopic", "acl-producer", "6"],
                           "the signed sends", good)
        assert [s["status"] for s in sent if "status" in s] == ["OK"] * 6
        stored = wait_stored(cluster, "AclTopic", 6, "the signed sends")
        pulled = run_to_done(cluster.namesrv_addr, tmp_path / "good", ["pull", "AclTopic", "acl-pull-group", "*",
                                                                      "--from", "1"], "the signed pull", good)
        assert sorted(m["body"] for m in messages(pulled)) == sorted(m.body.decode() for m in stored
                                                                     if m.queue_offset >= 1)
        refused = Runner(["pull", cluster.namesrv_addr, "AclTopic", "acl-pull-group"], tmp_path / "bad",
                         {**good, "RMQ_SECRET_KEY": "not-the-key"})
        try:
            cluster.wait_until(lambda: any("ACL refused request code 11 " in r.getMessage()
                                           for r in caplog.records), 30, "the broker refusing a signed pull")
        finally:
            refused.kill()
            refused.wait(5)
        assert messages(refused.seen) == []
