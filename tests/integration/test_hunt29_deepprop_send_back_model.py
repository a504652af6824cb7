"""Hypothesis: CONSUMER_SEND_MSG_BACK on a real broker (LocalCluster) against a plain model of 4.9.3's
consumerSendMsgBack, through the delay levels and back.

Rules send messages (some big enough to be compressed), give one back (a message of the topic or one the
retry topic delivered) with a delay level (-1, 0, a level, past the last one), a maxReconsumeTimes or none,
from a client version that may or may not pass it, and push the schedule's clock days ahead so that every
delayed message comes back to ``%RETRY%<group>``.  The model, from 4.9.3: reconsumeTimes at the maximum
(the request's from V3_4_9 on, else the group's 16) or a negative level is a dead letter, to ``%DLQ%`` queue
0 at once; level 0 is 3 + reconsumeTimes, one past the last level is the last; the record counts one more
reconsume, keeps body and sysFlag, and RETRY_TOPIC / ORIGIN_MESSAGE_ID once set.  After every step the
dead letters, the delayed messages (SCHEDULE_TOPIC_XXXX queue level - 1, DELAY and REAL_TOPIC / REAL_QID set)
and the retried ones are those of the model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import zlib
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import StoredMessage, SysFlag
from rocketstore.remoting.codes import MQVersion, RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.store.dispatch import SCHEDULE_TOPIC

TOPIC = "Hunt29SendBack"
GROUP = "hunt29-send-back-cg"
RETRY = f"%RETRY%{GROUP}"
DLQ = f"%DLQ%{GROUP}"
LAST_LEVEL = 18
GROUP_RETRY_MAX = 16
Seen = tuple[bytes, int, str | None, str | None]  # body, reconsume times, RETRY_TOPIC, ORIGIN_MESSAGE_ID


def _seen(m: StoredMessage) -> Seen:
    body = zlib.decompress(m.body) if m.sys_flag & SysFlag.COMPRESSED else m.body
    props = m.properties
    return (body, m.reconsume_times, props.get(PropertyName.RETRY_TOPIC),
            props.get(PropertyName.ORIGIN_MESSAGE_ID))


class SendBackMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.base = tempfile.mkdtemp(prefix="rocketstore-sendback-model-")
        self.cluster = LocalCluster(os.path.join(self.base, "store")).__enter__()
        self.cluster.create_topic(TOPIC)
        self.loop = asyncio.new_event_loop()
        self.producer = Producer(self.cluster.namesrv_addr, "hunt29-send-back-pg")
        self.loop.run_until_complete(self.producer.start())
        self.pool = ConnectionPool()
        self.count = 0
        #: what a consumer could give back: (stored message, its body uncompressed)
        self.consumable: list[tuple[StoredMessage, bytes]] = []
        self.dead: list[Seen] = []
        self.delayed: list[tuple[int, Seen]] = []  # (level, what comes back)
        self.retried: list[Seen] = []

    def teardown(self) -> None:
        if not hasattr(self, "cluster"):
            return
        try:
            self.loop.run_until_complete(self.producer.close())
            self.loop.run_until_complete(self.pool.close())
            self.loop.close()
            self.cluster.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def _stored(self, topic: str, queue_id: int = 0) -> list[StoredMessage]:
        store = self.cluster.broker.store
        return self.cluster.call(lambda: list(store.get(topic, queue_id, 0, 256).messages))

    @rule(big=st.booleans())
    def send(self, big: bool) -> None:
        self.count += 1
        body = f"m{self.count}".encode() + (b"z" * 5000 if big else b"")  # 4 KiB and more: compressed
        sent = self.loop.run_until_complete(self.producer.send(TOPIC, body, tags="T", keys=f"k{self.count}"))
        _, offset = decode_offset_message_id(sent.offset_msg_id)
        stored = self.cluster.call(lambda: self.cluster.broker.store.message_at(offset))
        assert stored is not None
        self.consumable.append((stored, body))

    @rule(data=st.data(), level=st.sampled_from([-1, 0, 0, 1, 2, 3, 17, 18, 19, 40]),
          max_times=st.sampled_from([None, None, 0, 1, 2, 3, 16, 20]), old_client=st.booleans())
    def send_back(self, data: st.DataObject, level: int, max_times: int | None, old_client: bool) -> None:
        if not self.consumable:
            return
        m, body = self.consumable[data.draw(st.integers(0, len(self.consumable) - 1))]
        ext = {"offset": str(m.commit_log_offset), "group": GROUP, "delayLevel": str(level),
               "originMsgId": m.msg_id, "originTopic": m.topic}
        if max_times is not None:
            ext["maxReconsumeTimes"] = str(max_times)
        version = MQVersion.V3_4_9 - 1 if old_client else MQVersion.V4_9_3
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext, version=version)
        answer = self.loop.run_until_complete(self.pool.request(self.cluster.broker_addr, request, 10))
        assert answer.code == 0, answer.remark
        props = m.properties
        seen = (body, m.reconsume_times + 1, props.get(PropertyName.RETRY_TOPIC) or m.topic,
                props.get(PropertyName.ORIGIN_MESSAGE_ID) or m.msg_id)
        most = GROUP_RETRY_MAX if max_times is None or old_client else max_times
        if m.reconsume_times >= most or level < 0:
            self.dead.append(seen)
        else:
            self.delayed.append((min(level or 3 + m.reconsume_times, LAST_LEVEL), seen))

    @rule()
    def days_later(self) -> None:
        """The schedule's clock goes three days ahead: every delayed message comes back to %RETRY%."""
        if not self.delayed:
            return
        schedule = self.cluster.broker.schedule
        assert schedule is not None
        later_ms = 3 * 86_400_000
        self.cluster.call(lambda: setattr(schedule, "_clock_ms", lambda: int(time.time() * 1000) + later_ms))
        try:
            want = len(self.retried) + len(self.delayed)
            deadline = time.monotonic() + 20
            while len(got := self._stored(RETRY)) < want and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            self.cluster.call(lambda: setattr(schedule, "_clock_ms", lambda: int(time.time() * 1000)))
        assert len(got) == want
        self.retried.extend(seen for _, seen in self.delayed)
        self.delayed = []
        known = {m.commit_log_offset for m, _ in self.consumable}
        self.consumable.extend((m, _seen(m)[0]) for m in got if m.commit_log_offset not in known)

    @invariant()
    def the_broker_agrees_with_the_model(self) -> None:
        if not hasattr(self, "cluster"):
            return
        self.cluster.wait_dispatched()
        dead = self._stored(DLQ)
        assert [_seen(m) for m in dead] == self.dead
        assert all((m.topic, m.queue_id) == (DLQ, 0) for m in dead)
        assert sorted(_seen(m) for m in self._stored(RETRY)) == sorted(self.retried)
        for level in {level for level, _ in self.delayed}:
            waiting = self._stored(SCHEDULE_TOPIC, level - 1)
            seen = [_seen(m) for m in waiting]
            assert all(s in seen for lv, s in self.delayed if lv == level)
            for m in waiting:
                props = m.properties
                assert (props.get(PropertyName.REAL_TOPIC), props.get(PropertyName.REAL_QID),
                        props.get(PropertyName.DELAY)) == (RETRY, "0", str(level))


SendBackMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.filter_too_much])
test_send_back_agrees_with_a_model = SendBackMachine.TestCase
