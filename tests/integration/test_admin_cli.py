"""The admin and client commands (``rocketstore topic|group|message|send|consume``) run as a user runs them:
``python -m rocketstore.cli.main ...`` in a subprocess, against an in-process broker (whose store and
offsets the test reads directly) or against ``rocketstore serve`` started as a subprocess too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, acl_home
from serve_process import ServeProcess, cli, env, free_port, wait_for, write_broker_conf

TOPIC = "AdminTopic"


def ok(*args: str) -> str:
    out = cli(*args)
    assert out.returncode == 0, f"rocketstore {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}"
    return out.stdout


def ok_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json"))


def one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("rocketstore: error: ")
    return out.stderr.strip()


def test_group_progress_shows_the_lag_a_partial_consume_leaves_on_each_queue(tmp_path: Path) -> None:
    count, consumed, group = 40, 15, "progress-group"
    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        created = ok_json("topic", "create", TOPIC, "-r", "4", "-w", "4", "-b", cluster.broker_addr, *ns)
        assert created["brokers"] == [cluster.broker_addr]
        sent = ok_json("send", TOPIC, "message {i}", "--keys", "key-{i}", "--tags", "T", "--count", str(count), *ns)
        assert [s["status"] for s in sent] == ["SEND_OK"] * count
        cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(TOPIC, q) for q in range(4)) == count, 20,
                           "every message in the consume queues")

        got = ok_json("consume", TOPIC, "--group", group, "--max", str(consumed), "--timeout", "30", *ns)
        assert len(got["messages"]) == consumed
        assert len({m["msgId"] for m in got["messages"]}) == consumed
        committed = {c["queueId"]: c["offset"] for c in got["committed"]}
        # what was printed is exactly what was committed: a prefix of every queue
        for q in range(4):
            offsets = sorted(m["queueOffset"] for m in got["messages"] if m["queueId"] == q)
            assert offsets == list(range(committed.get(q, 0)))
        broker_side = cluster.call(lambda: {q: max(0, cluster.broker.offsets.query(group, TOPIC, q)) for q in range(4)})
        assert broker_side == {q: committed.get(q, 0) for q in range(4)}

        # consumeTps is GROUP_GET_NUMS' last-minute tps (4.9.3's tpsGroupGetNums): there from its next snapshot
        cluster.call(lambda: cluster.broker.stats.sample_windows(cluster.broker.stats.clock_ms()))
        progress = ok_json("group", "progress", group, *ns)
        store_max = cluster.call(lambda: {q: cluster.broker.store.max_offset(TOPIC, q) for q in range(4)})
        rows = {r["queueId"]: r for r in progress["queues"] if r["topic"] == TOPIC}
        assert sorted(rows) == [0, 1, 2, 3]
        for q, row in rows.items():
            assert (row["brokerOffset"], row["consumerOffset"], row["diff"]) == \
                (store_max[q], broker_side[q], store_max[q] - broker_side[q])
            if broker_side[q]:
                last = cluster.call(lambda q=q: cluster.broker.store.store_time(TOPIC, q, broker_side[q] - 1))
                assert row["lastTimestamp"] == last
        assert progress["diffTotal"] == count - consumed
        # every message a pull handed out counts (pulls may fetch more than --max keeps), over the 10 to 60 s
        # between the item's first and last snapshot
        assert consumed / 60 <= progress["consumeTps"] <= count / 10

        table = ok("group", "progress", group, "--topic", TOPIC, *ns)
        assert f"Diff Total: {count - consumed}" in table
        assert table.splitlines()[0].split() == ["TOPIC", "BROKER", "QID", "BROKER", "OFFSET", "CONSUMER", "OFFSET",
                                                  "DIFF", "LAST", "TIME"]

        # an ordered topic on a cluster: its order config goes to the name server, as mqadmin -o puts it
        ordered = ok_json("topic", "create", "OrderedTopic", "-c", "DefaultCluster", "-w", "2", "-r", "2", "--order",
                          *ns)
        assert ordered["order"] and ordered["brokers"] == [cluster.broker_addr]
        assert cluster.call(lambda: cluster.namesrv.kv.get("ORDER_TOPIC_CONFIG", "OrderedTopic")) == "broker-a:2"
        assert cluster.call(lambda: cluster.broker.topics.get("OrderedTopic").order)  # type: ignore[union-attr]

        # the same group again takes the rest and nothing twice
        rest = ok_json("consume", TOPIC, "--group", group, "--max", str(count - consumed), "--timeout", "30", *ns)
        assert sorted(m["body"] for m in got["messages"] + rest["messages"]) == \
            sorted(f"message {i}" for i in range(count))
        assert ok_json("group", "progress", group, *ns)["diffTotal"] == 0


def test_consume_filters_by_tag_and_can_start_from_the_end(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        ok("send", "Tagged", "a{i}", "--tags", "A", "--count", "4", *ns)
        ok("send", "Tagged", "b{i}", "--tags", "B", "--count", "4", *ns)
        cluster.wait_until(lambda: sum(cluster.broker.store.max_offset("Tagged", q) for q in range(4)) == 8, 20,
                           "eight messages")
        only_b = ok_json("consume", "Tagged", "-g", "tag-group", "--tags", "B", "--max", "4", "--timeout", "30", *ns)
        assert sorted(m["body"] for m in only_b["messages"]) == [f"b{i}" for i in range(4)]
        late = ok_json("consume", "Tagged", "-g", "late-group", "--from", "last", "--timeout", "2", *ns)
        assert late["messages"] == []
        text = ok("consume", "Tagged", "-g", "text-group", "--max", "2", "--timeout", "30", *ns)
        assert text.splitlines()[-1].startswith("consumed 2 message(s) from Tagged as text-group; committed ")


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("admin-serve")
    conf = write_broker_conf(base / "broker.conf", messageDelayLevel="1s 2s 3s")
    with ServeProcess(base / "store", conf) as process:
        yield process


def test_topic_create_list_and_status_against_serve(serve: ServeProcess) -> None:
    ns = ("--namesrv", serve.namesrv_addr)
    out = ok("topic", "create", "ServeTopic", "-r", "3", "-w", "3", "-c", "DefaultCluster", *ns)
    assert out.strip() == f"created topic ServeTopic on {serve.broker_addr}: 3 read / 3 write queues, perm 6"
    wait_for(lambda: "ServeTopic" in ok_json("topic", "list", *ns), 30, "the topic in the name server's list")
    assert "ServeTopic" in ok("topic", "list", *ns).splitlines()
    empty = ok_json("topic", "status", "ServeTopic", *ns)
    assert [(s["queueId"], s["minOffset"], s["maxOffset"], s["lastUpdateTimestamp"]) for s in empty] == \
        [(0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 0)]
    sent = ok_json("send", "ServeTopic", "s{i}", "--count", "5", *ns)
    def five_stored() -> Any:
        status = ok_json("topic", "status", "ServeTopic", *ns)
        return status if sum(q["maxOffset"] for q in status) == 5 else None

    status = wait_for(five_stored, 30, "five messages in the status")
    for q in status:
        stored = [s for s in sent if s["queueId"] == q["queueId"]]
        assert q["maxOffset"] == len(stored)
        assert (q["lastUpdateTimestamp"] > 0) == bool(stored)
    table = ok("topic", "status", "ServeTopic", *ns).splitlines()
    assert table[0].split() == ["BROKER", "QID", "MIN", "OFFSET", "MAX", "OFFSET", "LAST", "UPDATED"]
    assert len(table) == 4


def test_query_by_key_by_offset_id_and_by_uniq_key_find_the_sent_message(serve: ServeProcess) -> None:
    ns = ("--namesrv", serve.namesrv_addr)
    [sent] = ok_json("send", "QueryTopic", "find me \u00fc", "--keys", "order-7 shared", "--tags", "Q",
                     "--property", "who=cli", *ns)
    by_key = wait_for(lambda: _query("-t", "QueryTopic", "-k", "order-7", *ns), 30, "the key to be indexed")
    by_offset_id = ok_json("message", "query", "--id", sent["offsetMsgId"], *ns)
    by_uniq_key = ok_json("message", "query", "--id", sent["msgId"], "-t", "QueryTopic", *ns)
    for found in (by_key, by_offset_id, by_uniq_key):
        [m] = found
        assert (m["topic"], m["body"], m["bodyEncoding"], m["tags"], m["keys"], m["msgId"], m["offsetMsgId"]) == \
            ("QueryTopic", "find me \u00fc", "utf-8", "Q", "order-7 shared", sent["msgId"], sent["offsetMsgId"])
        assert m["properties"]["who"] == "cli" and m["queueId"] == sent["queueId"]
        assert m["queueOffset"] == sent["queueOffset"]
    # the index keeps store times as whole seconds after its file's first message (RocketMQ's layout): a
    # message matches [begin, end] when that rounded-down time does, i.e. a window reaching a second back
    stored_at = by_key[0]["storeTimestamp"]
    window = ("--begin", str(stored_at - 1000), "--end", str(stored_at))
    assert [m["msgId"] for m in _query("-t", "QueryTopic", "-k", "order-7", *window, *ns)] == [sent["msgId"]]
    assert _query("-t", "QueryTopic", "-k", "order-7", "--end", str(stored_at - 1000), *ns) is None
    assert _query("-t", "QueryTopic", "-k", "order-7", "--begin", "2000-01-01T00:00:00", *ns) == by_key
    text = ok("message", "query", "-t", "QueryTopic", "-k", "shared", *ns)
    assert "Body (10 bytes, utf-8):\n  find me \u00fc" in text and "who=cli" in text
    one_line_error(cli("message", "query", "--id", sent["msgId"], *ns))  # a UNIQ_KEY needs its topic
    one_line_error(cli("message", "query", "-t", "QueryTopic", "-k", "no-such-key", *ns))

    long_body = "x" * 1000
    [big] = ok_json("send", "QueryTopic", long_body, "--keys", "big", *ns)
    [cut] = wait_for(lambda: _query("-t", "QueryTopic", "-k", "big", *ns), 30, "the big message")
    assert cut["bodyTruncated"] and len(cut["body"]) < 1000 and cut["bodyLength"] == 1000
    [whole] = ok_json("message", "query", "--id", big["offsetMsgId"], "--full-body", *ns)
    assert whole["body"] == long_body and not whole["bodyTruncated"]


def _query(*args: str) -> Any:
    out = cli("message", "query", *args, "--json")
    return json.loads(out.stdout) if out.returncode == 0 else None


def test_send_with_a_delay_level_arrives_not_before_due(serve: ServeProcess) -> None:
    ns = ("--namesrv", serve.namesrv_addr)
    [sent] = ok_json("send", "DelayedTopic", "in two seconds", "--keys", "late-1", "--delay-level", "2", *ns)
    # the offset id names the record waiting in SCHEDULE_TOPIC_XXXX queue 1 (level 2)
    [waiting] = ok_json("message", "query", "--id", sent["offsetMsgId"], *ns)
    assert (waiting["topic"], waiting["queueId"], waiting["properties"]["DELAY"]) == ("SCHEDULE_TOPIC_XXXX", 1, "2")
    [delivered] = wait_for(lambda: _query("-t", "DelayedTopic", "-k", "late-1", *ns), 60, "the delayed delivery")
    assert delivered["storeTimestamp"] >= waiting["storeTimestamp"] + 2000
    assert delivered["properties"]["REAL_TOPIC"] == "DelayedTopic" and delivered["properties"]["DELAY"] == "2"
    assert delivered["queueId"] == sent["queueId"] and delivered["msgId"] == sent["msgId"]


def test_errors_are_one_line_and_exit_non_zero(serve: ServeProcess) -> None:
    ns = ("--namesrv", serve.namesrv_addr)
    nobody = ("--namesrv", f"127.0.0.1:{free_port()}")
    assert "Connection refused" in one_line_error(cli("topic", "list", *nobody)) or "cannot connect" in \
        one_line_error(cli("topic", "list", *nobody))
    assert "NoSuchTopic" in one_line_error(cli("topic", "status", "NoSuchTopic", *ns))
    assert "No route info" in one_line_error(cli("consume", "NoSuchTopic", "-g", "g", "--timeout", "1", *ns))
    assert "invalid topic name" in one_line_error(cli("send", "bad topic", "x", *ns))
    assert "invalid group name" in one_line_error(cli("group", "progress", "bad/group", *ns))
    assert "no consume progress" in one_line_error(cli("group", "progress", "never-consumed", *ns))
    assert "NoCluster" in one_line_error(cli("topic", "create", "T1", "-c", "NoCluster", *ns))
    assert "KEY=VALUE" in one_line_error(cli("send", "T1", "x", "--property", "novalue", *ns))
    usage = cli("topic", "create", *ns)  # argparse: usage and exit status 2
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_consume_stops_with_one_line_when_the_broker_goes_away(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        ok("send", "GoneTopic", "before", "--namesrv", cluster.namesrv_addr)
        proc = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", "consume", "GoneTopic", "-g", "gone",
                                 "--timeout", "600", "--namesrv", cluster.namesrv_addr],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().rstrip().endswith("before"), "the message, printed as it comes"
        except BaseException:
            proc.kill()
            raise
    try:
        out, err = proc.communicate(timeout=60)  # the broker closed: the run ends at once, not after 600 s
    finally:
        proc.kill()
    assert proc.returncode == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("rocketstore: error: ") and out == ""


def test_group_status_and_consume_directly_reach_a_connected_push_consumer(tmp_path: Path) -> None:
    from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer

    handled: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        ok_json("topic", "create", "StatusCli", "-r", "2", "-w", "2", "-b", cluster.broker_addr, *ns)
        sent = ok_json("send", "StatusCli", "status {i}", "--count", "4", *ns)
        consumer = PushConsumer(cluster.namesrv_addr, "cli-status-group", {"StatusCli": "*"}, handle,
                                heartbeat_interval_s=0.5, rebalance_interval_s=0.5, persist_interval_s=0.2,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run(consumer.start())
        try:
            cluster.wait_until(lambda: len(handled) == 4, 20, "the 4 messages consumed")
            status = ok_json("group", "status", "cli-status-group", *ns)
            assert status["broker"] == cluster.broker_addr
            [client] = status["clients"]
            assert client["clientId"] == consumer.client_id and client["language"] == "JAVA"
            info = client["runningInfo"]
            assert info["properties"]["consumerGroup"] == "cli-status-group"
            assert {s["topic"] for s in info["subscriptionSet"]} == {"StatusCli", "%RETRY%cli-status-group"}
            text = ok("group", "status", "cli-status-group", *ns)
            assert consumer.client_id in text and "subscribes StatusCli: *" in text and "PULL TPS" in text

            offset_id = sent[2]["offsetMsgId"]
            out = ok("group", "consume-directly", "cli-status-group", "--client", consumer.client_id,
                     "--id", offset_id, *ns)
            assert out.startswith("CR_SUCCESS in ")
            assert handled.count(b"status 2") == 2  # once from the queue, once handed directly

            gone = cli("group", "consume-directly", "cli-status-group", "--client", "1.2.3.4@nobody",
                       "--id", offset_id, *ns)
            assert "not online" in one_line_error(gone)
        finally:
            cluster.run(consumer.shutdown())
        assert "not online" in one_line_error(cli("group", "status", "cli-status-group", *ns))


def test_serve_with_acl_and_the_cli_with_keys(tmp_path: Path) -> None:
    """``rocketstore serve -c broker.conf`` with aclEnable and rocketmqHome: ``rocketstore send`` / ``consume``
    with the account's keys work, without them or with one of the two missing they fail in one line."""
    home = acl_home(
        tmp_path / "home",
        "accounts:\n  - accessKey: cli-account\n    secretKey: cli-secret-key\n    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: SUB\n")
    conf = write_broker_conf(tmp_path / "broker.conf", aclEnable="true", rocketmqHome=str(home))
    keys = ("--access-key", "cli-account", "--secret-key", "cli-secret-key")
    with ServeProcess(tmp_path / "store", conf) as serve:
        ns = ("--namesrv", serve.namesrv_addr)
        assert "AclException" in one_line_error(cli("send", "AclCli", "refused", *ns))
        assert "both --access-key and --secret-key" in one_line_error(cli("send", "AclCli", "x", *ns,
                                                                          "--access-key", "cli-account"))
        sent = ok_json("send", "AclCli", "m{i}", "--count", "3", *ns, *keys)
        assert len(sent) == 3
        got = ok_json("consume", "AclCli", "--group", "cli-group", "--max", "3", "--timeout", "30", *ns, *keys)
        assert sorted(m["body"] for m in got["messages"]) == ["m0", "m1", "m2"]
        assert serve.terminate() == 0
