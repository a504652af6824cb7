"""Hypothesis: transactional messages on a real broker (LocalCluster) against a plain model.

A TransactionProducer sends half messages whose local transaction commits, rolls back or stays unknown; the
model decides what each check is answered; a late END_TRANSACTION may name the first half message after a
check round copied it (a local transaction that outlasted transactionTimeOut); check rounds are run by hand
(``transactions.check()``, transactionTimeOut 0 so every open half message is due) and the test waits for
their answers.  After every step: each transaction ended COMMIT is in its topic exactly once and no other
is; no check asks about a transaction that ended before its round (its answer would commit it again); none
is checked more than transactionCheckMax times, and those given up are in TRANS_CHECK_MAX_TIME_TOPIC.

The late-END rule is rocketstore's, not 4.9.3's: 4.9.3 checks the copy a round made after the END and, answered
COMMIT, writes the message a second time (a deliberate difference, README's transactions part). Do not
"fix" the broker toward 4.9.3 from this model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Coroutine
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from local_cluster import LocalCluster

from rocketstore.broker.transactions import CHECK_MAX_TIME_TOPIC, OP_TOPIC
from rocketstore.client.transaction_producer import (
    LocalTransactionState,
    TransactionMessage,
    TransactionProducer,
)
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand

TOPIC = "Hunt29Tx"
GROUP = "hunt29-tx-pg"
CHECK_MAX = 2
COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)
STATES = st.sampled_from([COMMIT, ROLLBACK, UNKNOW])
END_CODES = {COMMIT: 8, ROLLBACK: 12}
ENDED = {COMMIT: "committed", ROLLBACK: "rolled back"}


class TransactionMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.base = tempfile.mkdtemp(prefix="rocketstore-txmodel-")
        self.cluster = LocalCluster(os.path.join(self.base, "store"), transaction_timeout_ms=0,
                                    transaction_check_interval_ms=3_600_000, transaction_check_max=CHECK_MAX)
        self.cluster.__enter__()
        self.cluster.create_topic(TOPIC)
        # the producer's own loop runs all along: its ENDs go oneway and checks come to it at any time
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="txmodel-client", daemon=True)
        self.thread.start()
        self.lock = threading.Lock()
        #: UNIQ_KEY -> {"body", "state" (open, committed, rolled back, given up), "answer", "checks", "sent"}
        self.txs: dict[str, dict[str, Any]] = {}
        self.asked: list[str] = []
        self.problems: list[str] = []
        self.op_records = 0  # op records the ENDs so far must have written
        self.count = 0
        self.producer = TransactionProducer(self.cluster.namesrv_addr, GROUP, self._check)
        self._run(self.producer.start())

    def _check(self, message: TransactionMessage) -> LocalTransactionState:
        with self.lock:
            uniq = message.transaction_id or ""
            self.asked.append(uniq)
            tx = self.txs.get(uniq)
            if tx is None:
                self.problems.append(f"a check of {uniq}, never sent")
                return UNKNOW
            if tx["state"] != "open":
                self.problems.append(f"a check of {tx['body']!r}, {tx['state']} before the round")
                return UNKNOW
            tx["checks"] += 1
            if tx["answer"] is not UNKNOW:
                self._end(tx, tx["answer"])
            return tx["answer"]

    def _end(self, tx: dict[str, Any], state: LocalTransactionState) -> None:
        tx["state"] = ENDED[state]
        self.op_records += 1

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def teardown(self) -> None:
        if not hasattr(self, "cluster"):
            return
        try:
            self._run(self.producer.close())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
            self.cluster.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def _stored(self, topic: str) -> list[StoredMessage]:
        store = self.cluster.broker.store
        return self.cluster.call(lambda: list(store.get(topic, 0, 0, 1000).messages))

    def _wait_for_op_records(self) -> None:
        deadline = time.monotonic() + 20
        while True:
            self.cluster.wait_dispatched()
            with self.lock:
                want = self.op_records
            got = len(self._stored(OP_TOPIC))
            if got >= want or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert got == want, f"{got} op records, {want} ENDs"

    def _open_ones(self) -> list[str]:
        with self.lock:
            return sorted(u for u, tx in self.txs.items() if tx["state"] == "open")

    @rule(decision=st.sampled_from([COMMIT, ROLLBACK, UNKNOW, UNKNOW]), answer=STATES)
    def send(self, decision: LocalTransactionState, answer: LocalTransactionState) -> None:
        self.count += 1
        body = f"tx{self.count}".encode()

        def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
            with self.lock:
                tx = {"body": body, "state": "open", "answer": answer, "checks": 0}
                self.txs[message.transaction_id or ""] = tx
                if decision is not UNKNOW:
                    self._end(tx, decision)
            return decision

        sent = self._run(self.producer.send_in_transaction(TOPIC, body, execute))
        with self.lock:
            self.txs[sent.msg_id]["sent"] = sent
        self._wait_for_op_records()

    @rule(data=st.data(), answer=STATES)
    def change_answer(self, data: st.DataObject, answer: LocalTransactionState) -> None:
        if opened := self._open_ones():
            with self.lock:
                self.txs[data.draw(st.sampled_from(opened))]["answer"] = answer

    @rule(data=st.data(), state=st.sampled_from([COMMIT, ROLLBACK]))
    def late_end(self, data: st.DataObject, state: LocalTransactionState) -> None:
        """The local transaction ends after its check: an END_TRANSACTION naming the first half message."""
        if not (opened := self._open_ones()):
            return
        tx = self.txs[data.draw(st.sampled_from(opened))]
        sent = tx["sent"]
        _, offset = decode_offset_message_id(sent.offset_msg_id)
        ext = {"producerGroup": GROUP, "tranStateTableOffset": str(sent.queue_offset),
               "commitLogOffset": str(offset), "commitOrRollback": str(END_CODES[state]),
               "fromTransactionCheck": "false", "msgId": sent.msg_id, "transactionId": sent.msg_id}
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, ext)
        answer = self._run(self.producer.pool.request(self.cluster.broker_addr, request, 10))
        assert answer.code == 0, answer.remark
        with self.lock:
            self._end(tx, state)
        self._wait_for_op_records()

    @rule()
    def check_round(self) -> None:
        time.sleep(0.003)  # a half message stored in the round's first millisecond waits for the next round
        service = self.cluster.broker.transactions
        sent_before = service.checks_sent
        with self.lock:
            asked_before = len(self.asked)
            for tx in self.txs.values():  # checked CHECK_MAX times: this round gives it up
                if tx["state"] == "open" and tx["checks"] >= CHECK_MAX:
                    tx["state"] = "given up"
        self.cluster.run(service.check())
        sent = service.checks_sent - sent_before
        deadline = time.monotonic() + 20
        while len(self.asked) - asked_before < sent and time.monotonic() < deadline:
            time.sleep(0.02)
        asked = self.asked[asked_before:]
        assert len(asked) == sent and len(set(asked)) == len(asked), asked
        self._wait_for_op_records()

    @invariant()
    def the_broker_agrees_with_the_model(self) -> None:
        if not hasattr(self, "cluster"):
            return
        assert not self.problems
        self.cluster.wait_dispatched()
        with self.lock:
            txs = list(self.txs.values())
        assert sorted(m.body for m in self._stored(TOPIC)) == sorted(tx["body"] for tx in txs
                                                                     if tx["state"] == "committed")
        assert sorted(m.body for m in self._stored(CHECK_MAX_TIME_TOPIC)) == \
            sorted(tx["body"] for tx in txs if tx["state"] == "given up")
        assert all(tx["checks"] <= CHECK_MAX for tx in txs)


TransactionMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None,
                                                suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.filter_too_much])
test_transactions_agree_with_a_model = TransactionMachine.TestCase
