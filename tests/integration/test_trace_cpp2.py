"""Message trace from the official C++ client 2.x (core "2.1.0_cvs", through its C API, cpp2_tx_runner.py) against
our name server and broker, read back with AdminClient.query_message_trace and ``rocketstore trace``.

What the 2.1 client does differently from 4.9.3's Java client (its src/trace and hooks), which the test
pins down:

* it writes to ``rmq_sys_TRACE_DATA_<region>``, not RMQ_SYS_TRACE_TOPIC: its producer takes the region from
  the send answer's MSG_REGION (our broker answers its regionId, DefaultRegion), its consumer from the
  message's MSG_REGION property, which a 4.9.3 broker (and ours) does not store, so DEFAULT_REGION: the Pub
  and the Sub records of one message land in two topics;
* its SubAfter has 6 fields (no contextCode, timestamp or group) and empty keys are written as ``dKey``;
* it traces sync sends only, one trace message per record (no batching), keyed by the msgId and the
  message's keys string, sent from a thread pool whose queued work ShutdownProducer drops (the producer is
  kept up until its trace is stored).

Skipped (with the reason) only when pip cannot fetch the sdist or the library does not load here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cpp2_driver import Cpp2Lib
from local_cluster import LocalCluster, wait_stored
from serve_process import cli
from test_trace import types_of, wait_for_trace

from rocketstore.client.admin import AdminClient
from rocketstore.client.trace import CPP_TRACE_TOPIC_PREFIX, MessageType, TraceType
from rocketstore.client.trace_query import MessageTrace
from rocketstore.remoting.transport import run

#: where 2.1's producer writes (its region: our send answer's MSG_REGION) and where its consumer writes
CPP_PUB_TOPIC = CPP_TRACE_TOPIC_PREFIX + "DefaultRegion"
CPP_SUB_TOPIC = CPP_TRACE_TOPIC_PREFIX + "DEFAULT_REGION"


def query_until(namesrv: str, msg_id: str, trace_topic: str, types: list[str]) -> MessageTrace:
    """query_message_trace until the trace of *msg_id* in *trace_topic* has the record *types* (sorted)."""
    return run(wait_for_trace(namesrv, msg_id, lambda trace: types_of(trace) == types,
                              f"{types} of {msg_id} in {trace_topic}", trace_topic))


def test_the_cpp2_clients_trace_reaches_our_broker_and_our_query_decodes_it(cpp2_lib: Cpp2Lib,
                                                                            tmp_path: Path) -> None:
    topic, pgroup, cgroup, count = "Cpp2TraceTopic", "cpp2-trace-producer", "cpp2-trace-consumer", 4
    with LocalCluster(tmp_path / "store") as cluster:
        producer = cpp2_lib.runner(["produce", cluster.namesrv_addr, topic, pgroup, str(count), "--trace", "on",
                                    "--hold", "on"], tmp_path / "p")
        try:
            producer.collect_until(lambda seen: any(s.get("done") for s in seen), 60, f"{count} traced sends")
            sends = [s for s in producer.seen if "status" in s]
            assert [s["status"] for s in sends] == ["SEND_OK"] * count
            # 2.1's ShutdownProducer drops the trace sends still queued: it stays up until each Pub is stored
            pubs = {s["msg_id"]: query_until(cluster.namesrv_addr, s["msg_id"], CPP_PUB_TOPIC, ["Pub"]) for s in sends}
            producer.stop()
        finally:
            producer.kill()
        stored = {m.uniq_key: m for m in wait_stored(cluster, topic, count, "the sends")}
        assert sorted(stored) == sorted(s["msg_id"] for s in sends)

        (tmp_path / "c").mkdir()
        consumer = cpp2_lib.runner(["consume", cluster.namesrv_addr, topic, cgroup, "--trace"], tmp_path / "c")
        try:
            consumer.collect_until(lambda seen: len([s for s in seen if "body" in s]) >= count, 30,
                                   f"{count} deliveries")
            for s in sends:  # the consumer's trace is sent while it runs
                query_until(cluster.namesrv_addr, s["msg_id"], CPP_SUB_TOPIC, ["SubAfter", "SubBefore"])
            consumer.stop()
        finally:
            consumer.kill()

        for s in sends:
            i, msg_id = s["i"], s["msg_id"]
            [pub] = pubs[msg_id].views
            b = pub.bean
            assert (pub.context.group, pub.context.region_id, pub.context.success) == (pgroup, "DefaultRegion", True)
            assert (b.topic, b.msg_id, b.tags, b.keys, b.store_host, b.msg_type) == (
                topic, msg_id, "TagA" if i % 2 == 0 else "TagB", f"key-{i}", cluster.broker_addr,
                MessageType.Normal_Msg)
            assert b.offset_msg_id == stored[msg_id].msg_id and b.body_length == len(stored[msg_id].body)

            sub_trace = query_until(cluster.namesrv_addr, msg_id, CPP_SUB_TOPIC, ["SubAfter", "SubBefore"])
            before = next(v.context for v in sub_trace.views if v.context.trace_type is TraceType.SubBefore)
            after = next(v.context for v in sub_trace.views if v.context.trace_type is TraceType.SubAfter)
            assert (before.group, before.region_id, before.bean.keys, before.bean.retry_times) == (
                cgroup, "DEFAULT_REGION", f"key-{i}", 0)
            # 2.1's short SubAfter: no timestamp, group or contextCode of its own
            assert (after.request_id, after.success, after.bean.keys) == (before.request_id, True, f"key-{i}")
            assert (after.timestamp_ms, after.group, after.context_code) == (None, None, None)

        # the CLI reads the same records (a SubAfter without a timestamp shows its trace message's store time)
        out = cli("trace", sends[0]["msg_id"], "--namesrv", cluster.namesrv_addr, "--trace-topic", CPP_SUB_TOPIC,
                  "--json")
        assert out.returncode == 0, out.stderr
        printed: dict[str, Any] = json.loads(out.stdout)
        assert sorted(t["type"] for t in printed["traces"]) == ["SubAfter", "SubBefore"]
        assert printed["undecodable"] == []
        out = cli("trace", sends[0]["msg_id"], "--namesrv", cluster.namesrv_addr, "--trace-topic", CPP_PUB_TOPIC)
        assert out.returncode == 0 and f"Pub {pgroup}" in " ".join(out.stdout.split()), out.stdout

        # without a topic, every trace topic is read: the Pub and the Subs of one message come together
        async def query_all(msg_id: str) -> MessageTrace:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.query_message_trace(msg_id, trace_topic=None)

        merged = run(query_all(sends[0]["msg_id"]))
        assert types_of(merged) == ["Pub", "SubAfter", "SubBefore"]
        assert {CPP_PUB_TOPIC, CPP_SUB_TOPIC} <= set(merged.trace_topic.split(","))
        out = cli("trace", sends[0]["msg_id"], "--namesrv", cluster.namesrv_addr, "--json")  # no -t: the same
        assert out.returncode == 0, out.stderr
        assert sorted(t["type"] for t in json.loads(out.stdout)["traces"]) == ["Pub", "SubAfter", "SubBefore"]
