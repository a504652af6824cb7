"""The parts of the Node client ali-ons's public API (npm ``ali-ons`` 3.12.0) that test_node_client.py and
test_hunt14_node_retry_sends.py do not drive, against our name server and broker, checked end to end:

* Producer.send of a body over 4 KB (ali-ons zlib-compresses it and sets the compressed sys flag), of several
  keys, of setStartDeliverTime (an Aliyun-only property, stored as any other) and without a tag;
* a consumer whose handler throws: ali-ons sends the message back (delay level 0, so the broker picks
  3 + reconsumeTimes) with its own maxReconsumeTimes, and once reconsumeTimes reaches it the broker moves it
  to ``%DLQ%<group>`` (4.9.3's asyncConsumerSendMsgBack); a ``TagA || TagB`` expression; offsets committed;
* SQL92 subscriptions, broadcasting (offsets kept in the client, none committed to the broker) and namespaces
  (``<ns>%<topic>``, ``<ns>%<group>``);
* CONSUME_FROM_TIMESTAMP (QUERY_NOT_FOUND when the first message is no longer in memory, then
  SEARCH_OFFSET_BY_TIMESTAMP: 4.9.3 answers the entry nearest in time), a restarted group resuming from its
  committed offsets, pullBatchSize, and two consumer processes of one group sharing the queues.

The runner script is written to the test's temp directory; each scenario is one Node process.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, stored_messages, wait_stored
from ons_driver import OnsClient

from rocketstore.remoting.bodies import TopicConfig

RUNNER_JS = r"""'use strict';
// node runner.js JSON: one ali-ons scenario step, JSON lines on stdout.
//   {"op": "produce", namesrv, topic, group, namespace?, messages: [{body, repeat?, tags?, keys?, props?, deliverAt?}]}
//       one {"body", "status", "msg_id", "queue_id", "queue_offset", "topic"} line per send, then {"done"}
//   {"op": "consume", namesrv, topic, group, expression, options, count, fail?: [bodies], settleMs?}
//       {"ready"}, {"queues": [ids]} whenever the rebalance changes the queues of TOPIC, one line per delivery;
//       stops settleMs after the count-th delivery; a handler throws for a body in "fail"
const httpclient = require('urllib');
const { Producer, Consumer, Message } = require('ali-ons');

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');
const keys = { accessKeyId: 'no-access-key', accessKeySecret: 'no-secret-key' };

async function produce(c) {
  const producer = new Producer({ httpclient, nameSrv: c.namesrv, producerGroup: c.group,
    namespace: c.namespace || '', ...keys });
  await producer.ready();
  for (const m of c.messages) {
    const body = m.repeat ? m.body.repeat(m.repeat) : m.body;
    const msg = new Message(c.topic, m.tags || null, body);
    if (m.keys) msg.keys = m.keys;
    Object.assign(msg.properties, m.props || {});
    if (m.deliverAt) msg.setStartDeliverTime(m.deliverAt);
    const r = await producer.send(msg);
    emit({ body: m.body, status: r.sendStatus, msg_id: r.msgId, queue_id: Number(r.messageQueue.queueId),
      queue_offset: Number(r.queueOffset), topic: r.messageQueue.topic });
  }
  await producer.close();
  emit({ done: true });
}

async function consume(c) {
  const consumer = new Consumer({ httpclient, nameSrv: c.namesrv, consumerGroup: c.group, ...keys, ...c.options });
  const topic = c.options.namespace ? `${c.options.namespace}%${c.topic}` : c.topic;
  let got = 0;
  consumer.on('error', err => emit({ warn: err.message }));
  consumer.on(`topic_${topic}_queue_changed`, () => emit({ queues: [ ...consumer.processQueueTable.values() ]
    .filter(v => v.messageQueue.topic === topic).map(v => v.messageQueue.queueId).sort() }));
  await new Promise(resolve => {
    consumer.subscribe(c.topic, c.expression, async msg => {
      const body = msg.body.toString();
      const key = body.length > 40 ? body.slice(0, 3) : body;
      const fail = (c.fail || []).includes(key);
      emit({ body: key, len: body.length, tags: msg.tags, keys: msg.keys || null, topic: msg.topic,
        queue_id: Number(msg.queueId), queue_offset: Number(msg.queueOffset),
        reconsume_times: Number(msg.reconsumeTimes), failed: fail });
      if (++got === c.count) setTimeout(resolve, c.settleMs || 0);
      if (fail) throw new Error('the handler fails on purpose');
    });
    consumer.ready().then(() => emit({ ready: true }));
  });
  await consumer.close();
  emit({ done: true });
}

(async () => {
  const c = JSON.parse(process.argv[2]);
  if (c.op === 'produce') await produce(c);
  else await consume(c);
  process.exit(0);
})().catch(err => {
  emit({ error: `${err.name}: ${err.message}` });
  process.exit(1);
});
"""

#: every delay level 1 s, so a sent-back message comes out of SCHEDULE_TOPIC_XXXX quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}


class Node:
    """One runner process; its JSON lines are read as they come (``lines``) and all of them once it exits."""

    def __init__(self, ons_client: OnsClient, script: Path, cfg: dict[str, Any]) -> None:
        self.proc = subprocess.Popen([ons_client.node, str(script), json.dumps(cfg)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=ons_client._env(None))
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def take(self) -> list[dict[str, Any]]:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def finish(self, timeout_s: float = 90.0) -> list[dict[str, Any]]:
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self._reader.join(5)
            raise AssertionError(f"the ali-ons runner did not finish in {timeout_s} s: {self.take()[-5:]}")
        self._reader.join(10)
        lines = self.take()
        stderr = self.proc.stderr.read()[-2000:] if self.proc.stderr else ""
        assert lines and lines[-1].get("done"), (lines[-5:], stderr)
        return lines

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _runner(tmp_path: Path) -> Path:
    script = tmp_path / "ons_hunt18_runner.js"
    script.write_text(RUNNER_JS)
    return script


def _topics(cluster: LocalCluster, queues: dict[str, int]) -> None:
    def create() -> None:
        for topic, n in queues.items():
            cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=n, write_queue_nums=n))

    cluster.call(create)
    cluster.run(cluster.broker.registrar.register_all())  # ali-ons sends only along a route


def _produce(ons: OnsClient, script: Path, cluster: LocalCluster, topic: str, messages: list[dict[str, Any]],
             namespace: str = "") -> list[dict[str, Any]]:
    lines = Node(ons, script, {"op": "produce", "namesrv": cluster.namesrv_addr, "topic": topic,
                               "group": "hunt18-producer", "namespace": namespace, "messages": messages}).finish()
    sent = [line for line in lines if "status" in line]
    assert [s["status"] for s in sent] == ["SEND_OK"] * len(messages), lines
    cluster.wait_dispatched()  # in the consume queues the tests read next (built a moment after each send)
    return sent


def _consumer(ons: OnsClient, script: Path, cluster: LocalCluster, topic: str, group: str, count: int, *,
              expression: Any = "*", settle_ms: int = 1500, fail: list[str] | None = None, **options: Any) -> Node:
    options.setdefault("consumeFromWhere", "CONSUME_FROM_FIRST_OFFSET")
    return Node(ons, script, {"op": "consume", "namesrv": cluster.namesrv_addr, "topic": topic, "group": group,
                              "expression": expression, "options": options, "count": count, "settleMs": settle_ms,
                              "fail": fail or []})


def _deliveries(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if "len" in line]


def _committed(cluster: LocalCluster, group: str, topic: str, queues: int) -> list[int]:
    return cluster.call(lambda: [cluster.broker.offsets.query(group, topic, q) for q in range(queues)])


def _max_offsets(cluster: LocalCluster, topic: str, queues: int) -> list[int]:
    return cluster.call(lambda: [cluster.broker.store.max_offset(topic, q) for q in range(queues)])


def test_ali_ons_compressed_and_keyed_sends_and_a_failing_handler_ends_in_the_dlq(
        tmp_path: Path, ons_client: OnsClient) -> None:
    script = _runner(tmp_path)
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        _topics(cluster, {"OnsT1": 2})
        deliver_at = int(time.time() * 1000) + 3_600_000
        sent = _produce(ons_client, script, cluster, "OnsT1", [
            {"tags": "TagA", "body": "big", "repeat": 3000, "keys": ["k1", "k2"]},
            {"tags": "TagB", "body": "b1"},
            {"tags": "TagC", "body": "c1"},
            {"tags": "TagA", "body": "bad", "deliverAt": deliver_at},
            {"body": "notag"}])
        at = {(m.queue_id, m.queue_offset): m for m in stored_messages(cluster, "OnsT1", queues=2)}
        stored = {s["body"].encode(): at[s["queue_id"], s["queue_offset"]] for s in sent}
        big = stored[b"big"]
        assert big.sys_flag & 1 and len(big.body) < 9000, "ali-ons compresses bodies of 4 KB and more"
        assert [stored[b].body for b in (b"b1", b"c1", b"bad", b"notag")] == [b"b1", b"c1", b"bad", b"notag"]
        assert (big.keys, big.tags) == ("k1 k2", "TagA")
        assert stored[b"bad"].properties["__STARTDELIVERTIME"] == str(deliver_at), "an open-source broker keeps it"
        assert stored[b"notag"].tags == "null", "ali-ons writes a missing tag as the text null (its own quirk)"

        consumer = _consumer(ons_client, script, cluster, "OnsT1", "ons-dlq", 4, expression="TagA || TagB",
                             fail=["bad"], maxReconsumeTimes=1, settle_ms=2500)
        got = _deliveries(consumer.finish(120))
        assert sorted((g["body"], g["reconsume_times"]) for g in got) == \
            [("b1", 0), ("bad", 0), ("bad", 1), ("big", 0)]
        [big_got] = [g for g in got if g["body"] == "big"]
        assert (big_got["len"], big_got["keys"], big_got["tags"]) == (9000, "k1 k2", "TagA"), "decompressed"
        assert all(g["topic"] == "OnsT1" for g in got), "ali-ons gives retried messages their origin topic"

        [dead] = wait_stored(cluster, "%DLQ%ons-dlq", 1, "the dead letter", queues=1)
        bad_id = next(s["msg_id"] for s in sent if s["body"] == "bad")
        assert (dead.body, dead.reconsume_times) == (b"bad", 2), "reconsumeTimes 1 reached maxReconsumeTimes 1"
        assert (dead.properties["ORIGIN_MESSAGE_ID"], dead.properties["RETRY_TOPIC"]) == (bad_id, "OnsT1")
        [retried] = stored_messages(cluster, "%RETRY%ons-dlq", queues=1)
        assert (retried.body, retried.reconsume_times, retried.properties["DELAY"]) == (b"bad", 1, "3"), \
            "delay level 0 from ali-ons: the broker uses 3 + reconsumeTimes"
        # ali-ons commits the offset after its last consumed message (the filtered-out ones after it only once
        # a later pull finds nothing new), as the Java client's ProcessQueue does
        committed, ends = _committed(cluster, "ons-dlq", "OnsT1", 2), _max_offsets(cluster, "OnsT1", 2)
        for q in (0, 1):
            last = max(g["queue_offset"] for g in got if g["queue_id"] == q and g["reconsume_times"] == 0)
            assert last + 1 <= committed[q] <= ends[q], (q, committed, ends)
        assert _committed(cluster, "ons-dlq", "%RETRY%ons-dlq", 1) == [1]


def test_ali_ons_sql92_broadcast_and_namespace_consumers(tmp_path: Path, ons_client: OnsClient) -> None:
    script = _runner(tmp_path)
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        _topics(cluster, {"OnsT2": 2, "ns1%OnsT3": 2})
        _produce(ons_client, script, cluster, "OnsT2",
                 [{"tags": "TagA", "body": f"m{i}", "props": {"a": str(i)}} for i in range(6)])
        ns_sent = _produce(ons_client, script, cluster, "OnsT3", [{"body": "n0"}, {"body": "n1"}], namespace="ns1")
        assert {s["topic"] for s in ns_sent} == {"ns1%OnsT3"}
        assert sorted(m.body for m in stored_messages(cluster, "ns1%OnsT3", queues=2)) == [b"n0", b"n1"]

        sql = _consumer(ons_client, script, cluster, "OnsT2", "ons-sql", 2,
                        expression={"expressionType": "SQL92", "subString": "a > 3"})
        broadcast = _consumer(ons_client, script, cluster, "OnsT2", "ons-broadcast", 6, isBroadcast=True)
        spaced = _consumer(ons_client, script, cluster, "OnsT3", "ons-ns", 2, namespace="ns1")
        try:
            assert sorted(g["body"] for g in _deliveries(sql.finish())) == ["m4", "m5"]
            assert sorted(g["body"] for g in _deliveries(broadcast.finish())) == [f"m{i}" for i in range(6)]
            ns_got = _deliveries(spaced.finish())
        finally:
            for node in (sql, broadcast, spaced):
                node.kill()
        assert sorted((g["body"], g["topic"]) for g in ns_got) == [("n0", "ns1%OnsT3"), ("n1", "ns1%OnsT3")]

        assert _committed(cluster, "ons-sql", "OnsT2", 2) == _max_offsets(cluster, "OnsT2", 2)
        assert _committed(cluster, "ons-broadcast", "OnsT2", 2) == [-1, -1], "broadcast offsets stay in the client"
        assert _committed(cluster, "ns1%ons-ns", "ns1%OnsT3", 2) == [1, 1]
        assert cluster.call(lambda: cluster.broker.groups.get("ns1%ons-ns")) is not None


def test_ali_ons_from_timestamp_resume_and_two_consumers_sharing_the_queues(
        tmp_path: Path, ons_client: OnsClient) -> None:
    script = _runner(tmp_path)
    # no share of the commit log counts as in memory: a new group's QUERY_CONSUMER_OFFSET is QUERY_NOT_FOUND
    with LocalCluster(tmp_path / "store", store_overrides={"access_message_in_memory_max_ratio": 0}) as cluster:
        _topics(cluster, {"OnsT4": 2, "OnsT5": 4})
        _produce(ons_client, script, cluster, "OnsT4", [{"body": f"old{i}"} for i in range(4)])
        time.sleep(3.5)  # the timestamp is nearer the new messages than the old ones (4.9.3 picks the nearest)
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())  # ali-ons's consumeTimestamp, local time
        _produce(ons_client, script, cluster, "OnsT4", [{"body": f"new{i}"} for i in range(4)])

        lines = _consumer(ons_client, script, cluster, "OnsT4", "ons-ts", 4, consumeFromWhere="CONSUME_FROM_TIMESTAMP",
                          consumeTimestamp=stamp, pullBatchSize=1).finish()
        assert sorted(g["body"] for g in _deliveries(lines)) == [f"new{i}" for i in range(4)]
        assert any("maybe this group consumer boot first" in line.get("warn", "") for line in lines), \
            "QUERY_NOT_FOUND, which ali-ons reports as an error before it searches by time"
        assert _committed(cluster, "ons-ts", "OnsT4", 2) == [4, 4]

        _produce(ons_client, script, cluster, "OnsT4", [{"body": "later0"}, {"body": "later1"}])
        lines = _consumer(ons_client, script, cluster, "OnsT4", "ons-ts", 2, consumeFromWhere="CONSUME_FROM_TIMESTAMP",
                          consumeTimestamp=stamp).finish()
        assert sorted(g["body"] for g in _deliveries(lines)) == ["later0", "later1"], "resumes from its offsets"

        first = _consumer(ons_client, script, cluster, "OnsT5", "ons-pair", 4, rebalanceInterval=1000)
        second = _consumer(ons_client, script, cluster, "OnsT5", "ons-pair", 4, rebalanceInterval=1000)
        try:
            def split() -> bool:
                last = [[line["queues"] for line in n.take() if "queues" in line][-1:] for n in (first, second)]
                return all(last) and sorted(last[0][0] + last[1][0]) == [0, 1, 2, 3] and len(last[0][0]) == 2

            cluster.wait_until(split, 60, "the two ali-ons consumers holding two queues each")
            _produce(ons_client, script, cluster, "OnsT5", [{"body": f"q{i}"} for i in range(8)])
            got = [_deliveries(first.finish()), _deliveries(second.finish())]
        finally:
            first.kill()
            second.kill()
        assert sorted(g["body"] for g in got[0] + got[1]) == sorted(f"q{i}" for i in range(8))
        assert not {g["queue_id"] for g in got[0]} & {g["queue_id"] for g in got[1]}
        assert _committed(cluster, "ons-pair", "OnsT5", 4) == [2, 2, 2, 2]
