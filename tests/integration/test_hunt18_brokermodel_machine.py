"""Hypothesis: a name server + broker (LocalCluster, tiny segments so commitlog, consume-queue and index files
roll) driven by the Python client, against a simple model -- test_store_model.py one layer up.

Rules send (single, batch, tags, keys, a chosen queue), pull (tag filters, any offset: the answer's status,
nextBeginOffset, min and max as 4.9.3's PullMessageProcessor maps the store's GetMessageStatus), commit and
query consumer offsets, create / update (queue counts up and down) / delete topics, delete groups (with their
offsets), query by key / UNIQ_KEY / offset message id, search an offset by time, restart the broker on the
same store, and a crash-like restart: the live store directory is copied while the broker runs (the copy keeps
the ``abort`` marker) and a new broker starts on the copy (abnormal recovery).

Model choices, from 4.9.3's source:
* a deleted topic's name is never created again: after a crash, abnormal recovery may re-dispatch a deleted
  topic's records into a re-created queue that has no newer entry yet (4.9.3 does too), which an exact
  model cannot follow;
* a shrunk topic keeps the messages of its dropped queues (nothing cleans them up), seen again once the
  queue count grows back; pulling a queue id beyond the read queue count is a SYSTEM_ERROR;
* deleting a topic keeps its consumer offsets and its records in the commitlog (view by id still works);
* an offset never committed reads back 0 (queryConsumerOffset: min offset 0 and offset 0 not on disk);
* before the crash copy the broker persists consumerOffset.json, as its periodic flush does: offsets
  committed after the last flush are lost by a real crash, which 4.9.3 accepts and an exact model cannot;
* a restarted broker listens on its old port (and HA port): offset message ids hold the store host address;
* a batch's total stays well under the 8 KiB commitlog segment (a test geometry no real broker has: 4.9.3
  too cannot store a record larger than a segment).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from local_cluster import LocalCluster

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import (
    BrokerError,
    MessageQueue,
    NoRouteError,
    OutgoingMessage,
    Producer,
    PullConsumer,
    PullStatus,
)
from rocketstore.client.admin import AdminClient
from rocketstore.message.hashing import index_key_hash
from rocketstore.store.config import StoreConfig

CQ_ENTRIES_PER_FILE = 8
STORE = {"mapped_file_size_commit_log": 8192, "mapped_file_size_consume_queue": 20 * CQ_ENTRIES_PER_FILE,
         "max_hash_slot_num": 4, "max_index_num": 8, "message_index_safe": True}
TOPIC_NAMES = ("ModelT0", "ModelT1", "ModelT2", "ModelT3", "ModelT4")
GROUPS = ("ModelG0", "ModelG1")
TAGS = (None, "A", "B", "C")
FILTERS = {"*": None, "A": {"A"}, "A || B": {"A", "B"}, "C": {"C"}}
KEYS = ("k1", "k2", "k3")
IN_MEMORY_COUNT_LIMIT = 32
SYSTEM_ERROR = 1

for _topic in TOPIC_NAMES:
    assert len({index_key_hash(_topic, k) for k in KEYS}) == len(KEYS)

# up to ~630 bytes, so an 8 KiB commitlog segment holds a few records and a batch of four always fits one;
# single sends may be 4 KiB and more, which the producer compresses (a batch is never compressed)
BODIES = st.builds(lambda head, pad: head + bytes([len(head)]) * pad, st.binary(min_size=1, max_size=30),
                   st.integers(0, 600))
BIG_BODIES = st.builds(lambda head, pad: head + bytes([len(head)]) * pad, st.binary(min_size=1, max_size=30),
                       st.integers(4096, 6000))
KEY_LISTS = st.lists(st.sampled_from(KEYS), max_size=2, unique=True).map(tuple)
ONE = st.tuples(BODIES, st.sampled_from(TAGS), KEY_LISTS)
ONE_OR_BIG = st.tuples(BODIES | BIG_BODIES, st.sampled_from(TAGS), KEY_LISTS)


@dataclass
class Expected:
    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    tags: str | None
    keys: tuple[str, ...]
    uniq_key: str
    offset_msg_id: str
    store_timestamp: int = -1  # learnt from the first pull that returns it


class BrokerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = tempfile.mkdtemp(prefix="rocketstore-brokermodel-")
        self.generation = 0
        self.path = os.path.join(self.base, "gen0")
        self.cluster = LocalCluster(self.path, store_overrides=STORE).__enter__()
        self.loop = asyncio.new_event_loop()
        self.clients: dict[str, Any] = {}
        self.topics: dict[str, int] = {}  # live topic -> queue count
        self.deleted: set[str] = set()
        self.queues: dict[tuple[str, int], list[Expected]] = {}
        self.everything: list[Expected] = []
        self.offsets: dict[tuple[str, str, int], int] = {}
        self._open_clients()

    def teardown(self) -> None:
        try:
            self._close_clients()
            self.loop.close()
            self.cluster.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    # --- plumbing ---------------------------------------------------------------------------------

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))

    def _open_clients(self) -> None:
        addr = self.cluster.namesrv_addr
        self.clients = {"producer": Producer(addr, "ModelProducer"), "admin": AdminClient(addr)}
        for g in GROUPS:
            self.clients[g] = PullConsumer(addr, g)
        self._run(self.clients["producer"].start())

    def _close_clients(self) -> None:
        for c in self.clients.values():
            self._run(c.close())
        self.clients = {}

    @property
    def producer(self) -> Producer:
        return self.clients["producer"]  # type: ignore[no-any-return]

    @property
    def admin(self) -> AdminClient:
        return self.clients["admin"]  # type: ignore[no-any-return]

    def _mq(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic, self.cluster.broker_name, queue_id)

    def _wait_route(self, topic: str, queues: int | None) -> None:
        def routed() -> bool:
            route = self.cluster.namesrv.routes.route(topic)
            if queues is None:
                return route is None
            counts = [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] if route else None
            return counts == [(queues, queues)]
        self.cluster.wait_until(routed, 20, f"{topic}'s route with {queues} queues")

    def _set_topic(self, topic: str, queues: int) -> None:
        self._run(self.admin.create_topic(topic, broker_addr=self.cluster.broker_addr, read_queue_nums=queues,
                                          write_queue_nums=queues))
        self._wait_route(topic, queues)
        self.topics[topic] = queues
        for q in range(queues):
            self.queues.setdefault((topic, q), [])
        self._run(self.producer.discover(topic, refresh=True))

    def _remember(self, topic: str, queue_id: int, queue_offset: int, one: tuple[bytes, str | None,
                  tuple[str, ...]], uniq_key: str, offset_msg_id: str) -> None:
        body, tags, keys = one
        e = Expected(topic, queue_id, queue_offset, body, tags, keys, uniq_key, offset_msg_id)
        self.queues[(topic, queue_id)].append(e)
        self.everything.append(e)

    def _check_message(self, m: Any, e: Expected) -> None:
        assert (m.topic, m.queue_id, m.queue_offset, m.body) == (e.topic, e.queue_id, e.queue_offset, e.body)
        assert (m.tags, m.uniq_key, m.msg_id) == (e.tags, e.uniq_key, e.offset_msg_id)
        assert (tuple(m.keys.split(" ")) if m.keys else ()) == e.keys
        if e.store_timestamp == -1:
            e.store_timestamp = m.store_timestamp
        assert m.store_timestamp == e.store_timestamp

    def _start_broker(self, path: str, port: int) -> None:
        """A broker on *path*, listening on *port*: the old one's, as a restarted RocketMQ broker does
        (message ids hold the store host's address)."""
        c = self.cluster
        ha_port = c.broker.ha_server.port if c.broker.ha_server is not None else None

        async def start() -> Broker:
            config = BrokerConfig(broker_name=c.broker_name, namesrv_addr=c.namesrv_addr, listen_port=port,
                                  listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=ha_port)
            broker = Broker(config, StoreConfig(store_path_root_dir=path, **c.store_overrides))
            await broker.start()
            return broker

        c.broker = c.run(start())
        c.store_dir = path
        for topic, queues in self.topics.items():
            self._wait_route(topic, queues)

    # --- topics and groups ------------------------------------------------------------------------

    @initialize(queues=st.integers(1, 3), history=st.lists(ONE, max_size=20))
    def first_topic(self, queues: int, history: list[tuple[bytes, str | None, tuple[str, ...]]]) -> None:
        """The first topic, its queue 0 holding some history: short runs still cross segment boundaries."""
        self._set_topic(TOPIC_NAMES[0], queues)
        for one in history:
            body, tags, keys = one
            result = self._run(self.producer.send(TOPIC_NAMES[0], body, tags=tags, keys=list(keys) or None,
                                                  queue_id=0))
            self._remember(TOPIC_NAMES[0], 0, result.queue_offset, one, result.msg_id, result.offset_msg_id)

    @precondition(lambda self: len(self.topics) + len(self.deleted) < len(TOPIC_NAMES))
    @rule(queues=st.integers(1, 4))
    def create_topic(self, queues: int) -> None:
        topic = next(t for t in TOPIC_NAMES if t not in self.topics and t not in self.deleted)
        self._set_topic(topic, queues)

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), queues=st.integers(1, 4))
    def update_topic(self, data: st.DataObject, queues: int) -> None:
        self._set_topic(data.draw(st.sampled_from(sorted(self.topics))), queues)

    @precondition(lambda self: len(self.topics) > 1)
    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        topic = data.draw(st.sampled_from(sorted(self.topics)))
        self._run(self.admin.delete_topic(topic))
        del self.topics[topic]
        self.deleted.add(topic)
        self._wait_route(topic, None)

    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group: str) -> None:
        self._run(self.admin.delete_subscription_group(group, broker_addr=self.cluster.broker_addr,
                                                       remove_offsets=True))
        self.offsets = {k: v for k, v in self.offsets.items() if k[0] != group}

    # --- sends ------------------------------------------------------------------------------------

    def _draw_queue(self, data: st.DataObject) -> tuple[str, int]:
        """A queue of a live topic, queue 0 of the oldest live topic as often as all others together (so one
        queue grows over several consume-queue segments)."""
        live = sorted(self.topics)
        topic = data.draw(st.just(live[0]) | st.sampled_from(live), label="topic")
        queue_id = data.draw(st.just(0) | st.integers(0, self.topics[topic] - 1), label="queue")
        return topic, queue_id

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), one=ONE_OR_BIG)
    def send(self, data: st.DataObject, one: tuple[bytes, str | None, tuple[str, ...]]) -> None:
        topic, queue_id = self._draw_queue(data)
        body, tags, keys = one
        result = self._run(self.producer.send(topic, body, tags=tags, keys=list(keys) or None,
                                              queue_id=queue_id))
        assert result.status == "SEND_OK"
        assert result.message_queue.queue_id == queue_id
        assert result.queue_offset == len(self.queues[(topic, queue_id)])
        self._remember(topic, queue_id, result.queue_offset, one, result.msg_id, result.offset_msg_id)

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), many=st.lists(ONE, min_size=1, max_size=4))
    def send_batch(self, data: st.DataObject, many: list[tuple[bytes, str | None, tuple[str, ...]]]) -> None:
        topic, queue_id = self._draw_queue(data)
        messages = [OutgoingMessage(body, tags, list(keys) or None) for body, tags, keys in many]
        result = self._run(self.producer.send_batch(topic, messages, queue_id=queue_id))
        assert result.status == "SEND_OK"
        assert result.queue_offset == len(self.queues[(topic, queue_id)])
        uniq_keys = result.msg_id.split(",")
        offset_ids = result.offset_msg_id.split(",")
        assert len(uniq_keys) == len(offset_ids) == len(many)
        for i, (one, uniq, oid) in enumerate(zip(many, uniq_keys, offset_ids)):
            self._remember(topic, queue_id, result.queue_offset + i, one, uniq, oid)

    # --- pulls ------------------------------------------------------------------------------------

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), group=st.sampled_from(GROUPS), max_count=st.integers(0, 40),
          filter_name=st.sampled_from(sorted(FILTERS)), commit=st.booleans())
    def pull(self, data: st.DataObject, group: str, max_count: int, filter_name: str, commit: bool) -> None:
        topic, queue_id = self._draw_queue(data)
        self.cluster.wait_dispatched()
        entries = self.queues[(topic, queue_id)]
        n = len(entries)
        offset = data.draw(st.integers(-1, n + 2), label="offset")
        commit_offset = data.draw(st.integers(0, n + 2), label="commit") if commit else None
        got = self._run(self.clients[group].pull(self._mq(topic, queue_id), offset, max_count,
                                                 expression=filter_name, commit_offset=commit_offset))
        if commit_offset is not None:  # the commit flag: the master stores it, whatever the pull finds
            self.offsets[(group, topic, queue_id)] = commit_offset
        assert (got.min_offset, got.max_offset) == (0, n)
        if n == 0:  # NO_MESSAGE_IN_QUEUE: PULL_OFFSET_MOVED unless the request asked for offset 0
            moved = PullStatus.OFFSET_ILLEGAL if offset != 0 else PullStatus.NO_NEW_MSG
            assert (got.status, got.next_begin_offset, got.messages) == (moved, 0, [])
            return
        if offset < 0:  # OFFSET_TOO_SMALL
            assert (got.status, got.next_begin_offset) == (PullStatus.OFFSET_ILLEGAL, 0)
            return
        if offset == n:  # OFFSET_OVERFLOW_ONE
            assert (got.status, got.next_begin_offset) == (PullStatus.NO_NEW_MSG, n)
            return
        if offset > n:  # OFFSET_OVERFLOW_BADLY, min offset 0
            assert (got.status, got.next_begin_offset) == (PullStatus.OFFSET_ILLEGAL, 0)
            return
        wanted = FILTERS[filter_name]
        limit = min(max(1, max_count), IN_MEMORY_COUNT_LIMIT)
        scan_end = min(n, (offset // CQ_ENTRIES_PER_FILE + 1) * CQ_ENTRIES_PER_FILE,
                       offset + max(16000, max_count * 20) // 20)
        taken: list[int] = []
        java_next = scan_end
        for i in range(offset, scan_end):
            if len(taken) >= limit:
                java_next = i
                break
            if wanted is not None and entries[i].tags not in wanted:
                continue
            taken.append(i)
        assert got.status == (PullStatus.FOUND if taken else PullStatus.NO_MATCHED_MSG)
        assert [m.queue_offset for m in got.messages] == taken
        for m, i in zip(got.messages, taken):
            self._check_message(m, entries[i])
        assert got.next_begin_offset == java_next

    @precondition(lambda self: self.topics)
    @rule(data=st.data())
    def pull_beyond_read_queues(self, data: st.DataObject) -> None:
        topic = data.draw(st.sampled_from(sorted(self.topics)))
        queue_id = data.draw(st.integers(self.topics[topic], 5))
        with pytest.raises(BrokerError) as caught:
            self._run(self.clients[GROUPS[0]].pull(self._mq(topic, queue_id), 0, 1))
        assert caught.value.code == SYSTEM_ERROR
        assert f"queueId[{queue_id}] is illegal" in (caught.value.remark or "")

    # --- offsets ----------------------------------------------------------------------------------

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), group=st.sampled_from(GROUPS))
    def commit_offset(self, data: st.DataObject, group: str) -> None:
        topic = data.draw(st.sampled_from(sorted(self.topics)), label="topic")
        queue_id = data.draw(st.integers(0, 5), label="queue")  # beyond the queue count too: not checked
        offset = data.draw(st.integers(0, len(self.queues.get((topic, queue_id), ())) + 2), label="commit")
        self._run(self.clients[group].commit_offset(self._mq(topic, queue_id), offset))
        self.offsets[(group, topic, queue_id)] = offset

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), group=st.sampled_from(GROUPS))
    def query_offset(self, data: st.DataObject, group: str) -> None:
        topic = data.draw(st.sampled_from(sorted(self.topics)), label="topic")
        queue_id = data.draw(st.integers(0, 5), label="queue")
        got = self._run(self.clients[group].committed_offset(self._mq(topic, queue_id)))
        assert got == self.offsets.get((group, topic, queue_id), 0)

    # --- look-ups ---------------------------------------------------------------------------------

    @precondition(lambda self: self.topics)
    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def query_by_key(self, data: st.DataObject, key: str) -> None:
        topic = data.draw(st.sampled_from(sorted(self.topics)))
        self.cluster.wait_dispatched()
        expected = {e.uniq_key for e in self.everything if e.topic == topic and key in e.keys}
        hits = self._run(self.admin.query_by_key(topic, key, max_count=64))
        got = {m.uniq_key for m in hits}
        if len(expected) <= 32:
            assert got == expected
        else:
            assert got <= expected

    @precondition(lambda self: any(e.topic in self.topics for e in self.everything))
    @rule(data=st.data())
    def query_by_uniq_key(self, data: st.DataObject) -> None:
        e = data.draw(st.sampled_from([e for e in self.everything if e.topic in self.topics]))
        self.cluster.wait_dispatched()
        hits = self._run(self.admin.query_by_uniq_key(e.topic, e.uniq_key))
        assert hits
        for m in hits:
            self._check_message(m, e)

    @precondition(lambda self: self.everything)
    @rule(data=st.data())
    def view_by_id(self, data: st.DataObject) -> None:
        e = data.draw(st.sampled_from(self.everything))  # a deleted topic's too: the commitlog keeps it
        self._check_message(self._run(self.admin.view_message(e.offset_msg_id)), e)

    @precondition(lambda self: self.topics)
    @rule(data=st.data())
    def search_offset_by_time(self, data: st.DataObject) -> None:
        topic, queue_id = self._draw_queue(data)
        entries = self.queues[(topic, queue_id)]
        mq = self._mq(topic, queue_id)
        consumer = self.clients[GROUPS[0]]
        if not entries:
            assert self._run(consumer.search_offset(mq, 1)) == 0
            assert self._run(consumer.earliest_message_time(mq)) == -1
            return
        self.every_queue_pulls_back_the_model()  # learns the store times
        assert self._run(consumer.earliest_message_time(mq)) == entries[0].store_timestamp
        # before every message: the first segment, its first entry; after every one: the last segment (no
        # segment was modified that late), its last entry
        assert self._run(consumer.search_offset(mq, 1)) == 0
        late = entries[-1].store_timestamp + 86_400_000
        assert self._run(consumer.search_offset(mq, late)) == len(entries) - 1
        e = entries[data.draw(st.integers(0, len(entries) - 1), label="entry")]
        found = self._run(consumer.search_offset(mq, e.store_timestamp))
        assert 0 <= found < len(entries)
        if len(entries) <= CQ_ENTRIES_PER_FILE:
            assert entries[found].store_timestamp == e.store_timestamp

    # --- lifecycle --------------------------------------------------------------------------------

    @rule()
    def restart(self) -> None:
        self._close_clients()
        port = int(self.cluster.broker_addr.rsplit(":", 1)[1])
        self.cluster.run(self.cluster.broker.close())
        assert not os.path.exists(os.path.join(self.path, "abort"))
        self._start_broker(self.path, port)
        assert not self.cluster.broker.store.recovery.abnormal
        self._open_clients()

    @rule(flush_first=st.booleans())
    def crash(self, flush_first: bool) -> None:
        self._close_clients()
        broker = self.cluster.broker
        port = int(self.cluster.broker_addr.rsplit(":", 1)[1])
        self.cluster.wait_dispatched()
        if flush_first:
            self.cluster.call(broker.store.flush)
        assert self.cluster.call(lambda: broker.offsets.persist(force=True))  # the periodic flush, just done
        self.generation += 1
        copy = os.path.join(self.base, f"gen{self.generation}")
        # as test_store_model's copy_live_store: a segment still being preallocated is left out
        shutil.copytree(self.path, copy,
                        ignore=lambda _d, names: [n for n in names if n.endswith(".allocating")])
        self.cluster.run(broker.close())
        shutil.rmtree(self.path)
        self.path = copy
        assert os.path.exists(os.path.join(copy, "abort"))
        self._start_broker(copy, port)
        assert self.cluster.broker.store.recovery.abnormal
        self._open_clients()

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def every_queue_pulls_back_the_model(self) -> None:
        self.cluster.wait_dispatched()
        consumer = self.clients[GROUPS[1]]
        for topic, count in self.topics.items():
            for queue_id in range(count):
                entries = self.queues[(topic, queue_id)]
                mq = self._mq(topic, queue_id)
                offset = 0
                while offset < len(entries):
                    got = self._run(consumer.pull(mq, offset, 32))
                    assert got.status == PullStatus.FOUND, (topic, queue_id, offset, got.status)
                    assert got.messages[0].queue_offset == offset
                    for m in got.messages:
                        self._check_message(m, entries[m.queue_offset])
                    offset = got.messages[-1].queue_offset + 1
                    assert got.next_begin_offset == offset
                got = self._run(consumer.pull(mq, offset, 32))
                assert (got.status, got.max_offset) == (PullStatus.NO_NEW_MSG, len(entries))

    @invariant()
    def committed_offsets_read_back(self) -> None:
        for (group, topic, queue_id), offset in self.offsets.items():
            if topic in self.topics:
                assert self._run(self.clients[group].committed_offset(self._mq(topic, queue_id))) == offset

    @invariant()
    def routes_match_the_model(self) -> None:
        for topic, count in self.topics.items():
            route = self._run(self.admin.route(topic))
            assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == \
                [(self.cluster.broker_name, count, count)]
            assert [bd.broker_addrs.get(0) for bd in route.broker_datas] == [self.cluster.broker_addr]
        for topic in self.deleted:
            with pytest.raises(NoRouteError):
                self._run(self.admin.route(topic))


BrokerMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=40, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
test_broker_against_model = BrokerMachine.TestCase
