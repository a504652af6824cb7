"""More of the official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4) against our name server and broker:
async sends, the PullConsumer, a BROADCASTING PushConsumer and user properties in both directions.

The client runs in subprocesses (cpp_client_runner.py); skipped only when the wheel cannot be imported here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cpp_driver import Runner, collect_all_until, consume_messages, messages, requires_cpp_client
from local_cluster import LocalCluster, stored_messages
from serve_process import cli

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.transport import run

pytestmark = requires_cpp_client

QUEUES = 4  # the broker's default queue count for an auto-created topic


def body_of(i: int) -> str:
    return f"body-{i} ünï"


def number_of(body: str) -> int:
    return int(body.split()[0].split("-")[1])


def run_to_done(cluster: LocalCluster, home: Path, args: list[str], what: str) -> list[dict[str, Any]]:
    """Run a producing or pulling command of the runner until its {"done": true}; its other lines."""
    runner = Runner([args[0], cluster.namesrv_addr, *args[1:]], home)
    try:
        runner.collect_until(lambda seen: any(s.get("done") for s in seen), 60, what)
        runner.wait(10)
    finally:
        runner.kill()
    return [s for s in runner.seen if not s.get("done")]


def wait_dispatched(cluster: LocalCluster, topic: str, count: int) -> None:
    cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(topic, q) for q in range(8)) == count, 10,
                       f"{count} messages in the consume queues of {topic}")


def test_cpp_async_sends_all_succeed_with_ids_the_broker_resolves(tmp_path: Path) -> None:
    """send_async: every callback is a success (SEND_OK) whose message id (the client-made UNIQ_KEY) and queue
    offset name the stored message, found over the wire as mqadmin queryMsgById does (QUERY_MESSAGE by
    unique key, then VIEW_MESSAGE_BY_ID with its offset message id)."""
    topic, count = "CppAsyncTopic", 30
    with LocalCluster(tmp_path / "store") as cluster:
        sent = run_to_done(cluster, tmp_path, ["produce", topic, "cpp-async-producer", str(count), "--mode", "async"],
                           "every async send's callback")
        assert sorted(s["i"] for s in sent) == list(range(count)), "one callback per send"
        assert [s for s in sent if s["status"] != "OK"] == [], "every async send succeeded"
        ids = {s["i"]: s["msg_id"] for s in sent}
        assert len(set(ids.values())) == count and all(len(i) == 32 for i in ids.values())
        wait_dispatched(cluster, topic, count)

        async def resolve() -> dict[int, tuple[StoredMessage, StoredMessage]]:
            found = {}
            async with AdminClient(cluster.namesrv_addr) as admin:
                for i, msg_id in ids.items():
                    [hit] = [m for m in await admin.query_by_uniq_key(topic, msg_id) if m.uniq_key == msg_id]
                    found[i] = hit, await admin.view_message(hit.msg_id)
            return found

        # the index is written by the dispatch thread too: wait until it has every id
        cluster.wait_until(lambda: all(any(m.uniq_key == msg_id for m in cluster.broker.store.query(topic, msg_id)
                                           .messages) for msg_id in ids.values()), 10, "every id in the index")
        resolved = run(resolve())
        by_i = {s["i"]: s for s in sent}
        for i, (hit, viewed) in resolved.items():
            assert hit.body.decode() == viewed.body.decode() == body_of(i), f"id of send {i} names its message"
            assert viewed.keys == f"key-{i}" and viewed.tags == ("TagA", "TagB")[i % 2]
            assert viewed.properties["UNIQ_KEY"] == ids[i]
            assert viewed.queue_offset == by_i[i]["offset"], f"send {i}'s queue offset"
        assert len({(m.queue_id, m.queue_offset) for m, _ in resolved.values()}) == count


def test_cpp_pull_consumer_gets_every_message_once_and_only_matching_tags_with_an_expression(tmp_path: Path
                                                                                              ) -> None:
    """The C++ PullConsumer walks each queue from offset 0 with pulls of up to 3 (so several per queue, each
    from the previous nextBeginOffset) until NO_NEW_MSG: every message once, with its body, tags, keys, queue
    id and queue offset as stored; with "TagA || TagC" only those.  The client filters a pull's messages by tag
    again, so what the broker handed out is counted too (the pull handler's GROUP_GET_NUMS record): only the
    matching ones, as the broker filters by tag hash code."""
    topic, count = "CppPullTopic", 30
    tags = ["TagA", "TagB", "TagC"]
    with LocalCluster(tmp_path / "store") as cluster:
        handed_out: Counter[tuple[str, str]] = Counter()
        count_pull = cluster.broker.stats.pulled

        def counting(group: str, topic: str, count: int, *args: Any, **kwargs: Any) -> None:
            handed_out[(group, topic)] += count
            count_pull(group, topic, count, *args, **kwargs)

        cluster.broker.stats.pulled = counting  # type: ignore[method-assign]
        sent = run_to_done(cluster, tmp_path, ["produce", topic, "cpp-pull-producer", str(count),
                                               "--tags", ",".join(tags)], "the C++ producer")
        assert [s["status"] for s in sent] == ["OK"] * count
        wait_dispatched(cluster, topic, count)
        where = {m.body.decode(): (m.queue_id, m.queue_offset) for m in stored_messages(cluster, topic, QUEUES)}
        assert len(where) == count
        assert all(n >= 4 for n in [sum(1 for q, _ in where.values() if q == queue) for queue in range(QUEUES)]), \
            "more than one pull's worth in every queue"

        pulled = run_to_done(cluster, tmp_path, ["pull", topic, "cpp-pull-group", "*", "--max", "3"],
                             "the pull of everything")
        assert sorted(m["body"] for m in pulled) == sorted(body_of(i) for i in range(count)), "each exactly once"
        for m in pulled:
            i = number_of(m["body"])
            assert (m["tags"], m["keys"], m["topic"]) == (tags[i % 3], f"key-{i}", topic), m
            assert (m["queue_id"], m["queue_offset"]) == where[m["body"]], m
            assert m["id"] == sent[i]["msg_id"], "the message id is the producer's"

        filtered = run_to_done(cluster, tmp_path, ["pull", topic, "cpp-pull-filter-group", "TagA || TagC"],
                               "the pull of TagA and TagC")
        want = sorted(body_of(i) for i in range(count) if tags[i % 3] in ("TagA", "TagC"))
        assert sorted(m["body"] for m in filtered) == want, "only the matching tags, each once"
        assert cluster.call(lambda: (handed_out[("cpp-pull-group", topic)],
                                     handed_out[("cpp-pull-filter-group", topic)])) == (count, len(want)), \
            "the broker handed out every message to the '*' pull and only the matching ones to the filtered one"
        for m in filtered:
            assert (m["queue_id"], m["queue_offset"]) == where[m["body"]], m


def test_two_cpp_broadcasting_push_consumers_of_one_group_both_get_every_message(tmp_path: Path) -> None:
    """BROADCASTING: each client of the group takes every queue and keeps its own offsets, so both receive
    every message (in CLUSTERING they would split the queues, as test_cpp_client.py shows)."""
    topic, group, count = "CppBroadcastTopic", "cpp-broadcast-group", 24
    with LocalCluster(tmp_path / "store") as cluster:
        created = cli("topic", "create", topic, "-r", str(QUEUES), "-w", str(QUEUES), "--namesrv",
                      cluster.namesrv_addr)
        assert created.returncode == 0, created.stderr
        cluster.wait_until(lambda: cluster.namesrv.routes.route(topic), 10, "the topic's route")
        for name in "ab":
            (tmp_path / name).mkdir()
        runners = [Runner(["consume", cluster.namesrv_addr, topic, group, "*", "--broadcast"], tmp_path / name)
                   for name in "ab"]
        try:
            collect_all_until(runners, lambda seens: all(any(s.get("started") for s in seen) for seen in seens),
                              30, "both consumers to start")
            cluster.wait_until(lambda: len(cluster.broker.clients.consumer_ids(group)) == 2, 30,
                               "two clients in the group")
            # each client has a pull parked at the end of every queue: both are consuming all of them
            cluster.wait_until(lambda: {q: len(o) for q, o in cluster.broker.pull_hold.waiting(topic).items()}
                               == dict.fromkeys(range(QUEUES), 2), 30, "two parked pulls on every queue")

            async def send() -> None:
                async with Producer(cluster.namesrv_addr, "broadcast-producer") as producer:
                    for i in range(count):
                        await producer.send(topic, body_of(i).encode(), tags="TagA", queue_id=i % QUEUES)

            run(send())
            want = sorted(body_of(i) for i in range(count))
            collect_all_until(runners, lambda seens: all(len(messages(seen)) >= count for seen in seens), 60,
                              "every message at both consumers")
            for r in runners:
                r.stop()
        finally:
            for r in runners:
                r.kill()
        for r in runners:
            got = messages(r.seen)
            assert sorted(m["body"] for m in got) == want, "every message exactly once at each consumer"
            assert {m["queue_id"] for m in got} == set(range(QUEUES))


def test_cpp_user_properties_reach_the_store_and_python_ones_reach_the_cpp_consumer(tmp_path: Path) -> None:
    """Message.set_property on the C++ side is stored as a user property (and comes back through the C++
    PullConsumer); properties our Python Producer sets arrive at the C++ PushConsumer (get_property)."""
    topic, count = "CppPropsTopic", 6
    with LocalCluster(tmp_path / "store") as cluster:
        sent = run_to_done(cluster, tmp_path, ["produce", topic, "cpp-props-producer", str(count),
                                               "--prop", "color=red ünï", "--prop", "idx={i}"], "the C++ producer")
        assert [s["status"] for s in sent] == ["OK"] * count
        wait_dispatched(cluster, topic, count)
        stored = stored_messages(cluster, topic, QUEUES)
        assert len(stored) == count
        for m in stored:
            i = number_of(m.body.decode())
            assert m.properties.get("color") == "red ünï" and m.properties.get("idx") == str(i), m.properties
            assert m.keys == f"key-{i}" and m.tags == ("TagA", "TagB")[i % 2]
        pulled = run_to_done(cluster, tmp_path, ["pull", topic, "cpp-props-pull", "*", "--props", "color,idx"],
                             "the pull")
        assert sorted((m["body"], m["props"]["idx"], m["props"]["color"]) for m in pulled) == \
            sorted((body_of(i), str(i), "red ünï") for i in range(count))

        python_topic = "PyPropsTopic"

        async def send() -> list[str]:
            async with Producer(cluster.namesrv_addr, "py-props-producer") as producer:
                return [(await producer.send(python_topic, body_of(i).encode(), tags="TagP", keys=f"key-{i}",
                                             properties={"color": "blue ünï", "idx": str(i)})).msg_id
                        for i in range(count)]

        ids = run(send())
        wait_dispatched(cluster, python_topic, count)
        got = consume_messages(["consume", cluster.namesrv_addr, python_topic, "cpp-props-group", "*", "--props",
                                "color,idx,UNIQ_KEY"], tmp_path, count)
        assert sorted(m["body"] for m in got) == sorted(body_of(i) for i in range(count)), "each exactly once"
        for m in got:
            i = number_of(m["body"])
            assert m["props"] == {"color": "blue ünï", "idx": str(i), "UNIQ_KEY": ids[i]}, m
            assert (m["tags"], m["keys"], m["id"]) == ("TagP", f"key-{i}", ids[i]), m
