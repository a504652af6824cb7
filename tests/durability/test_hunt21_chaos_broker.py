"""``rocketstore serve`` killed (kill -9) at seeded random moments while producers send (plain, delayed at levels
1-2, transactional), a clustering push consumer and a lite pull consumer consume, restarted on the same store and
ports each time; every other kill takes the push consumer down with the broker, so that its successor starts
from the offsets the broker had persisted (session 21's chaos hunt).  SYNC_FLUSH and ASYNC_FLUSH: a process
kill leaves the page cache, so neither may lose anything.

Checked at the end, from the clients, the store files and ``rocketstore store verify``:

* every SEND_OK message is in its topic (plain ones exactly once; a delayed delivery or a transaction's
  commit since the last delayOffset.json / check-offset persist may be redone, as in 4.9.3: counted), in
  dense queues, and reaches both consumers;
* no consumer gets a message that was never sent; redeliveries are counted and printed;
* GROUP's offsets in config/consumerOffset.json, read while the broker is dead after each kill, never go
  backwards from one kill to the next, no delivery after a kill comes from below the offset on disk at that
  kill, and a clean shutdown leaves each queue's end there;
* the stopped store verifies clean (exit 0).

``ROCKETSTORE_CHAOS_CYCLES`` (default 4) and ``ROCKETSTORE_CHAOS_SEED`` run it longer or otherwise.
Deadlines only, no durations asserted.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import sys
import threading
from pathlib import Path

import pytest

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)
from serve_process import ServeProcess, cli, free_port, wait_for, write_broker_conf  # noqa: E402

from rocketstore.client import (  # noqa: E402
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    BlockingTransactionProducer,
    ClientError,
    ConsumedMessage,
    ConsumeStatus,
    LocalTransactionState,
    Producer,
    PullConsumer,
    TransactionMessage,
    TransactionProducer,
)
from rocketstore.client.admin import AdminClient  # noqa: E402
from rocketstore.errors import RocketStoreError  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402

PLAIN, DELAYED, TX = "ChaosPlain", "ChaosDelayed", "ChaosTx"
GROUP = "hunt21-chaos-consumer"
CYCLES = int(os.environ.get("ROCKETSTORE_CHAOS_CYCLES", "4"))
SEED = os.environ.get("ROCKETSTORE_CHAOS_SEED", "")
SEND_ERRORS = (RocketStoreError, ClientError, OSError, asyncio.TimeoutError)


class Chaos:
    """One store and one pair of ports; ``serve`` started, killed and started again on them."""

    def __init__(self, tmp_path: Path, flush: str) -> None:
        self.store = tmp_path / "store"
        self.conf = write_broker_conf(tmp_path / "broker.conf", flushDiskType=flush, mappedFileSizeCommitLog=64 << 10,
                                      messageDelayLevel="1s 2s", flushDelayOffsetInterval=300,
                                      transactionCheckInterval=500, transactionTimeOut=300)
        self.ports = (free_port(), free_port())
        self.serve: ServeProcess | None = None

    def start(self) -> ServeProcess:
        self.serve = ServeProcess(self.store, self.conf, namesrv_port=self.ports[0],
                                  broker_port=self.ports[1]).start()
        return self.serve

    def kill(self) -> None:
        if self.serve is not None:
            self.serve.kill()

    def committed_on_disk(self) -> dict[tuple[str, int], int]:
        """GROUP's committed offsets in consumerOffset.json: (topic, queue id) -> offset."""
        path = self.store / "config" / "consumerOffset.json"
        if not path.exists():
            return {}
        table = json.loads(path.read_text(encoding="utf-8")).get("offsetTable", {})
        return {(topic, int(q)): int(o) for topic in (PLAIN, DELAYED, TX)
                for q, o in table.get(f"{topic}@{GROUP}", {}).items()}


class Ledger:
    """What the producers tried, what they were told SEND_OK for, and what the consumer got."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tried: set[str] = set()                          # keys of every send attempted
        self.acked: dict[str, dict[str, str]] = {PLAIN: {}, DELAYED: {}, TX: {}}  # topic -> msg id -> key
        self.handled: collections.Counter[tuple[str, str]] = collections.Counter()
        self.handled_keys: list[tuple[str, str]] = []
        self.polled: collections.Counter[str] = collections.Counter()  # the lite pull consumer's, of PLAIN
        self.stop_polling = threading.Event()
        #: the broker's life (0: before the first kill); the push consumer's deliveries with the life they came in
        self.epoch = 0
        self.deliveries: list[tuple[str, int, int, int]] = []  # (topic, queue id, queue offset, epoch)

    def poll_until_stopped(self, lite: BlockingLitePullConsumer) -> None:
        while not self.stop_polling.is_set():
            try:
                messages = lite.poll(0.5)
            except SEND_ERRORS:
                continue
            with self.lock:
                for m in messages:
                    self.polled[m.msg_id] += 1
                    self.handled_keys.append((m.topic, m.body.decode().split(".", 1)[0]))

    def handle(self, messages: list[ConsumedMessage]) -> ConsumeStatus:
        with self.lock:
            for m in messages:
                self.handled[(m.topic, m.msg_id)] += 1
                self.deliveries.append((m.topic, m.queue_id, m.queue_offset, self.epoch))
                self.handled_keys.append((m.topic, m.body.decode().split(".", 1)[0]))
        return ConsumeStatus.CONSUME_SUCCESS


async def _send_until_killed(namesrv: str, topic: str, tag: str, rng: random.Random, ledger: Ledger,
                             delay: bool = False) -> None:
    async with Producer(namesrv, f"chaos-{tag}", timeout_s=3.0, retry_times=0) as producer:
        i = 0
        while True:
            i += 1
            key = f"{tag}-{i}"
            ledger.tried.add(key)
            props = {"DELAY": str(1 + i % 2)} if delay else None
            try:
                result = await producer.send(topic, (key + "." * rng.randrange(0, 1500)).encode(), keys=key,
                                             properties=props)
            except SEND_ERRORS:
                return
            if result.status == "SEND_OK":
                ledger.acked[topic][result.msg_id] = key
            if delay:
                await asyncio.sleep(0.05)  # a few delayed messages, not thousands


async def _transactions_until_killed(namesrv: str, tag: str, ledger: Ledger) -> None:
    def check(message: TransactionMessage) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    producer = TransactionProducer(namesrv, "chaos-tx", check, heartbeat_interval_s=0.3, retry_times=0)
    try:
        i = 0
        while True:
            i += 1
            key = f"{tag}-{i}"
            ledger.tried.add(key)
            try:
                result = await producer.send_in_transaction(TX, key.encode(),
                                                            lambda m, a: LocalTransactionState.COMMIT_MESSAGE,
                                                            keys=key)
            except SEND_ERRORS:
                return
            if result.status == "SEND_OK":
                ledger.acked[TX][result.msg_id] = key
            await asyncio.sleep(0.2)
    finally:
        await producer.close()


async def _stored(namesrv: str, topic: str) -> dict[int, list[tuple[int, str]]]:
    """queue id -> (queue offset, UNIQ_KEY) of every message of *topic*, as a consumer pulls them."""
    async with PullConsumer(namesrv, "chaos-inspector") as consumer:
        found: dict[int, list[tuple[int, str]]] = {}
        for mq in await consumer.queues(topic):
            offset, rows = 0, found.setdefault(mq.queue_id, [])
            while True:
                result = await consumer.pull(mq, offset)
                rows.extend((m.queue_offset, m.properties.get("UNIQ_KEY", "")) for m in result.messages)
                if not result.messages:
                    break
                offset = result.next_begin_offset
        return found


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_kill_9_under_producers_and_a_consumer_loses_nothing(tmp_path: Path, flush: str) -> None:
    rng = random.Random(f"hunt21-chaos-{flush}{SEED}")
    chaos = Chaos(tmp_path, flush)
    ledger = Ledger()
    consumer: BlockingPushConsumer | None = None
    checker: BlockingTransactionProducer | None = None
    lite: BlockingLitePullConsumer | None = None
    poller: threading.Thread | None = None
    on_disk: list[dict[tuple[str, int], int]] = []  # consumerOffset.json's GROUP offsets after each kill
    try:
        serve = chaos.start()

        async def topics() -> None:
            async with AdminClient(serve.namesrv_addr) as admin:
                for topic in (PLAIN, DELAYED, TX):
                    await admin.create_topic(topic, broker_addr=serve.broker_addr, read_queue_nums=2,
                                             write_queue_nums=2)

        run(topics())
        def push_consumer() -> BlockingPushConsumer:
            started = BlockingPushConsumer(serve.namesrv_addr, GROUP, {PLAIN: "*", DELAYED: "*", TX: "*"},
                                           ledger.handle, persist_interval_s=0.2, heartbeat_interval_s=0.5,
                                           rebalance_interval_s=0.5, route_refresh_interval_s=0.5,
                                           consume_concurrency=2, long_poll_ms=1000)
            started.start()
            return started

        consumer = push_consumer()
        # answers the broker's checks of the transactions whose end a kill cut off, across every restart
        checker = BlockingTransactionProducer(serve.namesrv_addr, "chaos-tx",
                                              lambda m: LocalTransactionState.COMMIT_MESSAGE,
                                              heartbeat_interval_s=0.3, route_refresh_interval_s=0.5)
        checker.start()
        lite = BlockingLitePullConsumer(serve.namesrv_addr, "hunt21-chaos-lite", auto_commit_interval_s=1.0,
                                        long_poll_ms=1000, pull_batch_size=32, heartbeat_interval_s=0.5,
                                        rebalance_interval_s=0.5, route_refresh_interval_s=0.5)
        lite.subscribe(PLAIN, "*")
        lite.start()
        poller = threading.Thread(target=ledger.poll_until_stopped, args=(lite,), daemon=True)
        poller.start()
        for cycle in range(CYCLES):
            async def go(cycle: int = cycle, serve: ServeProcess = serve) -> None:
                loads = [_send_until_killed(serve.namesrv_addr, PLAIN, f"p{cycle}a", rng, ledger),
                         _send_until_killed(serve.namesrv_addr, PLAIN, f"p{cycle}b", rng, ledger),
                         _send_until_killed(serve.namesrv_addr, DELAYED, f"d{cycle}", rng, ledger, delay=True),
                         _transactions_until_killed(serve.namesrv_addr, f"t{cycle}", ledger)]
                load = asyncio.ensure_future(asyncio.gather(*loads))
                await asyncio.sleep(rng.uniform(0.1, 2.0))
                await asyncio.to_thread(serve.kill)
                await asyncio.wait_for(load, 30)

            run(go())
            if cycle % 2:  # the consumer dies with the broker: the next one starts from the offsets on disk
                consumer.shutdown()  # (its last commit finds no broker)
                consumer = None
            on_disk.append(chaos.committed_on_disk())
            serve = chaos.start()
            with ledger.lock:
                ledger.epoch = cycle + 1
            if consumer is None:
                consumer = push_consumer()
        acked = {topic: dict(ids) for topic, ids in ledger.acked.items()}
        assert len(acked[PLAIN]) > 100 and acked[DELAYED] and acked[TX], {t: len(v) for t, v in acked.items()}

        # every SEND_OK message is stored (plain ones once), in dense queues
        redone: dict[str, int] = {}
        for topic in (PLAIN, DELAYED, TX):
            found = run(_stored(serve.namesrv_addr, topic)) if topic != DELAYED else None
            if found is None:  # the delayed ones come due a little later
                def all_due() -> dict[int, list[tuple[int, str]]] | None:
                    rows = run(_stored(serve.namesrv_addr, DELAYED))
                    have = {u for r in rows.values() for _, u in r}
                    return rows if not set(acked[DELAYED]) - have else None

                found = wait_for(all_due, 40, "every delayed message in its topic", interval_s=0.3)
            where = collections.Counter(u for rows in found.values() for _, u in rows)
            for queue_id, rows in found.items():
                assert [r[0] for r in rows] == list(range(len(rows))), f"{topic} queue {queue_id} is not dense"
            lost = [(u, acked[topic][u]) for u in acked[topic] if u not in where]
            assert not lost, f"{topic}: {len(lost)} of {len(acked[topic])} SEND_OK messages lost, e.g. {lost[:3]}"
            twice = [u for u, n in where.items() if n > 1]
            if topic == PLAIN:
                assert not twice, f"{topic}: stored more than once: {twice[:3]}"
            else:  # a delivery (or a check's commit) since the last delayOffset / check offset persist redone
                redone[topic] = len(twice)

        # every SEND_OK message reaches the consumer; nothing it gets was never sent
        def missing() -> list[tuple[str, str]]:
            with ledger.lock:
                return [(t, u) for t, ids in acked.items() for u in ids if not ledger.handled[(t, u)]]

        wait_for(lambda: not missing(), 60, "every SEND_OK message at the consumer", interval_s=0.2)

        def unpolled() -> list[str]:
            with ledger.lock:
                return [u for u in acked[PLAIN] if not ledger.polled[u]]

        wait_for(lambda: not unpolled(), 60, "every SEND_OK plain message at the lite pull consumer", interval_s=0.2)
        with ledger.lock:
            phantoms = [k for _, k in ledger.handled_keys if k not in ledger.tried]
            duplicates = sum(n - 1 for n in ledger.handled.values() if n > 1)
            polled_twice = sum(n - 1 for n in ledger.polled.values() if n > 1)
        assert not phantoms, f"consumed messages that were never sent: {phantoms[:3]}"
        print(f"{flush}: {sum(len(v) for v in acked.values())} SEND_OK, {duplicates} redeliveries over {CYCLES} kills "
              f"(lite pull: {polled_twice}); "
              f"stored twice: {redone}")

        # committed offsets on disk never go backwards from one kill to the next, and no delivery after a kill
        # comes from before the offset committed on disk at the kill
        for before, after in zip(on_disk, on_disk[1:]):
            for mq, offset in before.items():
                assert after.get(mq, -1) >= offset, f"{mq} went back: {on_disk}"
        with ledger.lock:
            behind = [(t, q, o, e) for t, q, o, e in ledger.deliveries if e and o < on_disk[e - 1].get((t, q), 0)]
        assert not behind, f"delivered from before the offset committed at the kill: {behind[:5]} {on_disk}"
        assert any(on_disk), "no consumer offset was ever persisted before a kill; the check proves nothing"
        consumer.shutdown()
        consumer = None
        checker.shutdown()
        checker = None
        serve.terminate()
        ends = {(PLAIN, q): len(rows) for q, rows in run(_stored(chaos.start().namesrv_addr, PLAIN)).items()}
        committed = {mq: o for mq, o in chaos.committed_on_disk().items() if mq[0] == PLAIN}
        assert committed == ends, "the clean shutdown committed each queue's end"
        chaos.serve.terminate()  # type: ignore[union-attr]
        verify = cli("store", "verify", str(chaos.store), "-c", str(chaos.conf))
        assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    finally:
        ledger.stop_polling.set()
        if poller is not None:
            poller.join(30)
        if lite is not None:
            lite.close()
        if consumer is not None:
            consumer.shutdown()
        if checker is not None:
            checker.shutdown()
        chaos.kill()
