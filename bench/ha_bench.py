"""Master/slave replication and transactions: every broker in its own process, our client in this one.

Four processes besides this one: master A (``rocketstore serve``, brokerRole ASYNC_MASTER, its store filled
beforehand), master S (``rocketstore serve``, SYNC_MASTER, empty) and a slave of each (``rocketstore broker -c
slave.conf``: same brokerName, brokerId 1, brokerRole SLAVE), all ports picked by the OS.  Rows, each against a
reference measured in the same run, rounds alternated (A B B A ...):

* replication catch-up: master A's store holds N MB of 1 KiB messages (written in this process with
  MessageStore.put_batch before the master starts); an empty slave process starts on a fresh store and copies
  the commitlog in the HA protocol's 32 KiB chunks.  Timed from the slave's "listening on" line to the first
  GET_BROKER_RUNTIME_INFO answer (polled every few ms) whose commitLogMaxOffset equals the master's; MB/s.
  Reference: the machine's loopback copy ceiling for the same bytes: one process sends them (read from
  master A's commitlog segment) in 32 KiB chunks over a TCP loopback socket, another receives them straight
  into a writable mmap of a new file (so it writes pages too), timed in the receiver from accept to the last
  byte; MB/s, the median of three copies per round.  A fresh slave store each round; the commitlog segment
  is larger than the data, since an empty slave starts at the master's last segment.
* one-at-a-time sends of 100 B (``await Producer.send``) to master S, each answered only once its slave has
  acknowledged the bytes, against the same sends to master A (answered once stored), a slave attached to
  each: the price of waiting for the slave.
* transactional sends of 100 B, one at a time (``TransactionProducer.send_in_transaction`` with an execute
  that commits at once: the half message's send, then END_TRANSACTION oneway) against plain
  ``Producer.send`` one at a time, both to master A.

No target in the issue for any of them: informational rows (target None).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.broker_servers import ADDR, _env, _free_port
from bench.common import Notes, Row, alternate, make_messages, median, stop_process

__all__ = ["GROUP", "HA_SIZES", "HaSizes", "ha_workloads"]

GROUP = "replication and transactions (master and slave in their own processes)"
BROKER_NAME = "bench-ha"
#: the HA protocol's chunk (ha.py TRANSFER_BATCH_BYTES); the copy ceiling sends in chunks of the same size
CHUNK = 32 * 1024
SEND_BODY = 100
POLL_S = 0.003
#: copies per round of the copy ceiling (a copy takes a tenth of the catch-up's time and swings 3x on this
#: shared machine): the round's figure is their median
COPIES_PER_ROUND = 3


@dataclass(frozen=True)
class HaSizes:
    catchup_rounds: int
    catchup_bytes: int  # commitlog bytes master A holds (1 KiB messages)
    segment_bytes: int  # commitlog segment of every store here: larger than catchup_bytes
    small_store: bool  # tiny consume queue and index files (smoke)
    rounds: int  # rounds of the send rows
    send_n: int  # one-at-a-time sends per round and side (SYNC/ASYNC master)
    tx_n: int  # transactional / plain sends per round


HA_SIZES = {
    "smoke": HaSizes(catchup_rounds=2, catchup_bytes=2 << 20, segment_bytes=8 << 20, small_store=True, rounds=2,
                     send_n=40, tx_n=40),
    "quick": HaSizes(catchup_rounds=3, catchup_bytes=64 << 20, segment_bytes=1 << 30, small_store=False,
                     rounds=3, send_n=1000, tx_n=1000),
    "full": HaSizes(catchup_rounds=3, catchup_bytes=256 << 20, segment_bytes=1 << 30, small_store=False,
                    rounds=3, send_n=3000, tx_n=3000),
}


# --- processes -------------------------------------------------------------------------------------------


class _Proc:
    """A subprocess whose stdout lines are read by a thread and stamped with ``time.perf_counter()`` on
    arrival; stderr goes to a file beside its store."""

    def __init__(self, args: list[str], err_path: str) -> None:
        self.args = args
        self.err_path = err_path
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[tuple[float, str | None]] = queue.Queue()

    def spawn(self) -> _Proc:
        with open(self.err_path, "w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                         text=True, env=_env())
        threading.Thread(target=self._read, args=(self.proc,), daemon=True, name="bench-ha-out").start()
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put((time.perf_counter(), line))
        self._lines.put((time.perf_counter(), None))

    def addresses(self, count: int, timeout_s: float = 60.0) -> tuple[float, list[str]]:
        """(arrival time, addresses) of the first stdout line: the "listening on" line."""
        try:
            at, line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            at, line = time.perf_counter(), None
        found = ADDR.findall(line or "")
        if len(found) != count:
            self.stop()
            raise RuntimeError(f"{' '.join(self.args[2:5])} did not say where it listens: {line!r}; "
                               f"see {self.err_path}")
        return at, found

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, 30.0)


def _write_conf(path: str, hs: HaSizes, **props: object) -> str:
    values: dict[str, object] = {"brokerName": BROKER_NAME, "flushDiskType": "ASYNC_FLUSH",
                                 "mappedFileSizeCommitLog": hs.segment_bytes, "preallocateCommitLog": "false"}
    if hs.small_store:
        values.update(mappedFileSizeConsumeQueue=20_000 * 20, maxHashSlotNum=2000, maxIndexNum=8000)
    values.update(props)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def _serve(directory: str, conf: str) -> _Proc:
    os.makedirs(directory, exist_ok=True)
    return _Proc([sys.executable, "-m", "rocketstore.cli.main", "serve", "--store", os.path.join(directory, "store"),
                  "--namesrv-port", "0", "--broker-port", "0", "-c", conf], os.path.join(directory, "serve.err"))


def _slave(directory: str, conf: str, namesrv: str) -> _Proc:
    os.makedirs(directory, exist_ok=True)
    return _Proc([sys.executable, "-m", "rocketstore.cli.main", "broker", "-c", conf, "--store",
                  os.path.join(directory, "store"), "-p", "0", "-n", namesrv, "--host", "127.0.0.1"],
                 os.path.join(directory, "broker.err"))


def _fill(conf: str, store_dir: str, nbytes: int) -> None:
    """*nbytes* of 1 KiB messages (a pool of 4,096, cycled) into the store at *store_dir*, 64 per put_batch,
    with the store settings of *conf* (the master opens it with the same file)."""
    from rocketstore import MessageStore
    from rocketstore.broker.config import load_broker_conf

    _, config, _ = load_broker_conf(conf, overrides={"storePathRootDir": store_dir})
    pool = make_messages(1024, 4096, key_prefix="ha")
    batches = [pool[i : i + 64] for i in range(0, len(pool), 64)]
    store = MessageStore.open(store_dir, config)
    try:
        i = 0
        while store.max_commit_log_offset < nbytes:
            result = store.put_batch(batches[i % len(batches)])
            if not result.ok:
                raise RuntimeError(f"filling the master's store: {result.status}")
            i += 1
    finally:
        store.close()


# --- remoting: the commitlog end of a broker -------------------------------------------------------------


async def _commitlog_end(conn: Any) -> int:
    from rocketstore.remoting import RemotingCommand, RequestCode, fastjson

    answer = await conn.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 5)
    if answer.code != 0:
        raise RuntimeError(f"GET_BROKER_RUNTIME_INFO: {answer.code} {answer.remark}")
    return int(fastjson.loads(answer.body)["table"]["commitLogMaxOffset"])


class _Bench:
    """The bench side: one event loop for the offset polls and the producers."""

    def __init__(self) -> None:
        from rocketstore.remoting.transport import new_event_loop

        self.loop = new_event_loop()
        self._closers: list[Callable[[], Any]] = []

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def commitlog_end(self, addr: str) -> int:
        from rocketstore.remoting.transport import connect

        async def go() -> int:
            conn = await connect(addr)
            try:
                return await _commitlog_end(conn)
            finally:
                conn.close()

        return int(self.run(go()))

    def wait_for_end(self, addr: str, end: int, timeout_s: float) -> float:
        """perf_counter() of the first answer from *addr* whose commitLogMaxOffset is *end*, polling every
        POLL_S over one connection."""
        from rocketstore.remoting.transport import connect

        async def go() -> float:
            conn = await connect(addr)
            try:
                deadline = time.perf_counter() + timeout_s
                while True:
                    got = await _commitlog_end(conn)
                    now = time.perf_counter()
                    if got >= end:
                        if got != end:
                            raise RuntimeError(f"the slave's commitlog ends at {got}, past the master's {end}")
                        return now
                    if now > deadline:
                        raise RuntimeError(f"the slave reached {got} of {end} bytes in {timeout_s:.0f} s")
                    await asyncio.sleep(POLL_S)
            finally:
                conn.close()

        return float(self.run(go()))

    def producer(self, namesrv: str, group: str) -> Any:
        from rocketstore.client import Producer

        p = Producer(namesrv, group)
        self._closers.append(p.close)
        return p

    def tx_producer(self, namesrv: str, group: str) -> Any:
        from rocketstore.client import TransactionProducer
        from rocketstore.client.transaction_producer import LocalTransactionState

        p = TransactionProducer(namesrv, group, lambda message: LocalTransactionState.COMMIT_MESSAGE)
        self._closers.append(p.close)
        return p

    def send_rate(self, producer: Any, topic: str, body: bytes, n: int) -> float:
        async def go() -> None:
            send = producer.send
            for _ in range(n):
                r = await send(topic, body, tags="TagA")
                if r.status != "SEND_OK":
                    raise RuntimeError(f"send to {topic}: {r.status}")

        t0 = time.perf_counter()
        self.run(go())
        return n / (time.perf_counter() - t0)

    def tx_rate(self, producer: Any, topic: str, body: bytes, n: int) -> float:
        from rocketstore.client.transaction_producer import LocalTransactionState

        commit = LocalTransactionState.COMMIT_MESSAGE

        def execute(message: Any, arg: object) -> LocalTransactionState:
            return commit

        async def go() -> None:
            send = producer.send_in_transaction
            for _ in range(n):
                r = await send(topic, body, execute, tags="TagA")
                if r.status != "SEND_OK" or r.local_transaction_state != commit:
                    raise RuntimeError(f"transactional send to {topic}: {r.status} {r.local_transaction_state}")

        t0 = time.perf_counter()
        self.run(go())
        return n / (time.perf_counter() - t0)

    def until_send_ok(self, producer: Any, topic: str, body: bytes, timeout_s: float = 60.0) -> None:
        """Send until SEND_OK (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave is connected)."""
        async def go() -> None:
            deadline = time.monotonic() + timeout_s
            while True:
                r = await producer.send(topic, body, tags="TagA")
                if r.status == "SEND_OK":
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"send to {topic} still {r.status} after {timeout_s:.0f} s")
                await asyncio.sleep(0.05)

        self.run(go())

    def queued(self, addr: str, topic: str) -> int:
        """Messages in the 4 auto-created queues of *topic* on the broker at *addr*."""
        from rocketstore.remoting import RemotingCommand, RequestCode
        from rocketstore.remoting.transport import connect

        async def go() -> int:
            conn = await connect(addr)
            try:
                total = 0
                for q in range(4):
                    a = await conn.request(RemotingCommand.request(
                        RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)}), 5)
                    total += int(a.ext_fields.get("offset", "0")) if a.code == 0 else 0
                return total
            finally:
                conn.close()

        return int(self.run(go()))

    def close(self) -> None:
        try:
            for close in reversed(self._closers):
                with contextlib.suppress(Exception):  # closing a client changes no figure
                    self.run(close())
        finally:
            self.loop.close()


# --- the loopback copy ceiling ---------------------------------------------------------------------------

_RECEIVER = r"""
import mmap, os, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.posix_fallocate(fd, 0, n)
m = mmap.mmap(fd, n)
view = memoryview(m)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
t0 = time.perf_counter()
pos = 0
while pos < n:
    got = conn.recv_into(view[pos:pos + (1 << 20)])
    if not got:
        raise SystemExit(f"the sender closed at {pos} of {n}")
    pos += got
dt = time.perf_counter() - t0
print(repr(dt), flush=True)
view.release()
m.close()
os.close(fd)
conn.close()
"""

_SENDER = r"""
import mmap, socket, sys
port, path, n, chunk = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(path, "rb") as fh:
    m = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
view = memoryview(m)[:n]
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for pos in range(0, n, chunk):
    s.sendall(view[pos:pos + chunk])
s.close()
"""


def _copy_ceiling(source: str, nbytes: int, target: str) -> float:
    """MB/s of *nbytes* of *source* sent in CHUNK-byte pieces over TCP loopback by one process and received
    into a writable mmap of *target* (a new file) by another, timed by the receiver from accept to the last
    byte."""
    receiver = subprocess.Popen([sys.executable, "-c", _RECEIVER, target, str(nbytes)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, text=True)
    sender: subprocess.Popen[bytes] | None = None
    try:
        assert receiver.stdout is not None
        port = int(receiver.stdout.readline())
        sender = subprocess.Popen([sys.executable, "-c", _SENDER, str(port), source, str(nbytes), str(CHUNK)],
                                  stdin=subprocess.DEVNULL)
        line = receiver.stdout.readline()
        if sender.wait(timeout=120) != 0 or receiver.wait(timeout=120) != 0 or not line.strip():
            raise RuntimeError("the loopback copy ceiling failed")
        return nbytes / float(line) / 1e6
    finally:
        for proc in (sender, receiver):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=15)
        if receiver.stdout is not None:
            receiver.stdout.close()
        if os.path.exists(target):
            os.remove(target)


# --- the workload ----------------------------------------------------------------------------------------


def ha_workloads(mode: str, workdir: str, notes: Notes, add: Callable[[Row], None]) -> None:
    """The three replication and transaction rows of *mode*; rows go to *add*."""
    hs = HA_SIZES[mode]
    base = os.path.join(workdir, "ha")
    os.makedirs(base, exist_ok=True)
    t_start = time.perf_counter()
    print(f"[replication: {hs.catchup_bytes / 1e6:,.0f} MB catch-up, SYNC_MASTER and transactional sends]",
          flush=True)
    master_a_conf = _write_conf(os.path.join(base, "master-a.conf"), hs, brokerRole="ASYNC_MASTER",
                                haListenPort=_free_port())
    master_s_conf = _write_conf(os.path.join(base, "master-s.conf"), hs, brokerRole="SYNC_MASTER",
                                brokerName=BROKER_NAME + "-sync", haListenPort=_free_port())
    slave_a_conf = _write_conf(os.path.join(base, "slave-a.conf"), hs, brokerId=1, brokerRole="SLAVE")
    slave_s_conf = _write_conf(os.path.join(base, "slave-s.conf"), hs, brokerId=1, brokerRole="SLAVE",
                               brokerName=BROKER_NAME + "-sync")
    master_a = _serve(os.path.join(base, "master-a"), master_a_conf)
    master_s = _serve(os.path.join(base, "master-s"), master_s_conf)
    slaves: list[_Proc] = []  # slave S, then the catch-up slave of the current round
    bench: _Bench | None = None
    try:
        _fill(master_a_conf, os.path.join(base, "master-a", "store"), hs.catchup_bytes)
        master_a.spawn()
        master_s.spawn()
        _, (namesrv_a, broker_a) = master_a.addresses(2)
        _, (namesrv_s, _broker_s) = master_s.addresses(2)
        slave_s = _slave(os.path.join(base, "slave-s"), slave_s_conf, namesrv_s)
        slaves.append(slave_s.spawn())
        slave_s.addresses(1)
        bench = _Bench()
        b = bench
        end = b.commitlog_end(broker_a)
        segment = os.path.join(base, "master-a", "store", "commitlog", f"{0:020d}")
        rounds_done = [0]

        def catchup() -> float:
            while len(slaves) > 1:  # the previous round's slave: stopped, its store deleted
                slaves.pop().stop()
            directory = os.path.join(base, f"slave-a-{rounds_done[0]}")
            shutil.rmtree(os.path.join(base, f"slave-a-{rounds_done[0] - 1}"), ignore_errors=True)
            rounds_done[0] += 1
            slave = _slave(directory, slave_a_conf, namesrv_a)
            slaves.append(slave.spawn())
            t0, (addr,) = slave.addresses(1)
            t1 = b.wait_for_end(addr, end, timeout_s=max(60.0, end / 5e6))
            return end / (t1 - t0) / 1e6

        copy_target = os.path.join(base, "copy-target")
        per_round = alternate(hs.catchup_rounds, {
            "slave": catchup,
            "copy": lambda: median([_copy_ceiling(segment, end, copy_target) for _ in range(COPIES_PER_ROUND)])})
        m = {k: median(v) for k, v in per_round.items()}
        notes.extra["replication catch-up MB/s per round"] = per_round
        print("  catch-up rounds, MB/s: slave " + ", ".join(f"{v:,.0f}" for v in per_round["slave"])
              + "; copy ceiling " + ", ".join(f"{v:,.0f}" for v in per_round["copy"]), flush=True)
        mb = end / 1e6
        add(Row(GROUP, f"replication catch-up: an empty slave process copies a {mb:,.0f} MB commitlog from its "
                "master (32 KiB chunks) vs a loopback copy into an mmap", "MB/s", m["slave"],
                f"the same {mb:,.0f} MB sent in 32 KiB chunks over TCP loopback by one process, received into "
                "a writable mmap of a new file by another", m["copy"]))
        # the last catch-up slave stays: master A's slave for the send rows

        body = bytes((i * 7 + 3) % 251 for i in range(SEND_BODY))
        sync_p = b.producer(namesrv_s, "bench-ha-sync")
        async_p = b.producer(namesrv_a, "bench-ha-async")
        tx_p = b.tx_producer(namesrv_a, "bench-ha-tx")
        b.until_send_ok(sync_p, "BenchHaSend", body)  # route, topic, and the slave connected
        b.until_send_ok(async_p, "BenchHaSend", body)
        b.tx_rate(tx_p, "BenchHaTx", body, 20)  # warm up: route, heartbeat, topic
        b.send_rate(async_p, "BenchHaPlain", body, 20)
        m = {k: median(v) for k, v in alternate(hs.rounds, {
            "sync": lambda: b.send_rate(sync_p, "BenchHaSend", body, hs.send_n),
            "async": lambda: b.send_rate(async_p, "BenchHaSend", body, hs.send_n)}).items()}
        add(Row(GROUP, f"send {SEND_BODY} B, one at a time (Producer.send): SYNC_MASTER (answered once its slave "
                "has the bytes) vs ASYNC_MASTER, a slave attached to each", "msgs/s", m["sync"],
                "the same sends to an ASYNC_MASTER with a slave attached (answered once stored)", m["async"]))
        m = {k: median(v) for k, v in alternate(hs.rounds, {
            "tx": lambda: b.tx_rate(tx_p, "BenchHaTx", body, hs.tx_n),
            "plain": lambda: b.send_rate(async_p, "BenchHaPlain", body, hs.tx_n)}).items()}
        add(Row(GROUP, f"transactional send {SEND_BODY} B, one at a time (send_in_transaction, execute commits at "
                "once) vs Producer.send", "msgs/s", m["tx"],
                "Producer.send one at a time to the same broker (ASYNC_MASTER with a slave attached)", m["plain"]))
        _check_commits(b, broker_a, 20 + hs.rounds * hs.tx_n, notes)
    finally:
        if bench is not None:
            bench.close()
        for proc in (*reversed(slaves), master_a, master_s):
            proc.stop()
        shutil.rmtree(base, ignore_errors=True)
    _notes(notes, hs)
    print(f"  ({time.perf_counter() - t_start:.1f} s)", flush=True)


def _check_commits(b: _Bench, broker: str, expected: int, notes: Notes) -> None:
    """Every committed transaction reaches its topic (END_TRANSACTION is oneway: allow the broker a moment)."""
    deadline = time.monotonic() + 10
    got = b.queued(broker, "BenchHaTx")
    while got < expected and time.monotonic() < deadline:
        time.sleep(0.05)
        got = b.queued(broker, "BenchHaTx")
    if got != expected:
        notes.caveat(f"Transactional rows: {got:,} messages reached the topic after {expected:,} commits.")


def _notes(notes: Notes, hs: HaSizes) -> None:
    notes.caveat(
        "Replication rows: masters are `rocketstore serve` (name server + broker) and slaves `rocketstore "
        "broker -c slave.conf` (same brokerName, brokerId 1, brokerRole SLAVE), each its own process on its "
        f"own store in the temp directory, ASYNC_FLUSH, {hs.segment_bytes >> 20} MiB commitlog segments "
        "(larger than the data: an empty slave starts at the master's last segment), haListenPort a free "
        "port. Catch-up: master A's store is filled with 1 KiB messages in the bench process (put_batch) "
        "before the master starts on it; each round starts an empty slave and times it from its 'listening "
        f"on' line to the first GET_BROKER_RUNTIME_INFO answer (polled every {POLL_S * 1000:g} ms) whose "
        "commitLogMaxOffset equals the master's. The copy ceiling sends the first bytes of master A's "
        "commitlog in 32 KiB sendall calls (TCP_NODELAY) from one process; another receives them with "
        "recv_into (up to 1 MiB) straight into a writable mmap of a new fallocated file, timed from accept to "
        f"the last byte; {COPIES_PER_ROUND} copies per round, their median the round's figure. "
        f"{hs.catchup_rounds} rounds, alternated, medians.")
    notes.caveat(
        f"SYNC_MASTER and transaction rows: {SEND_BODY} B bodies, one send awaited at a time on one "
        "connection from this process's event loop; master S (SYNC_MASTER) and master A (ASYNC_MASTER) each "
        "have a slave attached; a transactional send is the half message's send (answered once stored), "
        "execute returning COMMIT_MESSAGE, then END_TRANSACTION oneway (not waited for). "
        f"{hs.rounds} rounds per row, alternated, medians; informational, no target.")

