"""The broker over loopback: ``rocketstore serve`` in its own process, our asyncio client in this one, each
workload alternated with Redis Streams over TCP loopback (appendfsync everysec) in the same run.

Per body size (100 B, 1 KiB), one topic (auto-created: 4 queues), tag ``TagA``, no keys:

* send, one at a time: ``await Producer.send(...)`` in a loop against Redis XADD, one command in flight;
* send, 64 in flight on one connection: 64 coroutines sending in a loop over the producer's one pooled
  connection (requests are multiplexed by opaque) against a 64-deep XADD pipeline;
* send_batch of 64 against a 64-deep XADD pipeline;
* pull, 1000 per request from one queue of a pre-filled topic, decoded by the client, against XREAD COUNT
  1000 over a pre-filled stream, parsed by a RESP client.  RocketMQ caps a pull at
  ``maxTransferCountOnMessageInMemory`` (32) and ``maxTransferBytesOnMessageInMemory`` (256 KiB) by default;
  both are broker settings, and this bench's broker.conf raises them (:data:`PULL_BROKER_PROPS`) so that one
  pull may carry as many messages as one XREAD.  The row label says so.

Each also against NATS JetStream when ``nats-server`` is installed (bench/nats_peer.py: acknowledged publishes
one or 64 in flight, pull-consumer fetches of 1000), and the one-at-a-time send against the round-trip
ceiling: an echo of a frame of the same size between two Python processes, on asyncio and on uvloop
(bench/echo.py).

At 100 B, if the official C++ client (PyPI ``rocketmq``) imports, its ``send_sync`` loop (in a subprocess)
joins the one-at-a-time rounds; its rate is also set against the real RocketMQ broker's figure from
/work/shared/ANCHORS.md, as an informational row (not measured in this run).

The three send workloads run once more, after those processes have stopped, against a second broker with
flushDiskType=SYNC_FLUSH (a send answered after the group commit's fdatasync) and a second redis-server with
appendfsync always (bench/broker_sync_bench.py): informational rows, no target.

Both servers run as separate processes and both clients in this process, one at a time, so each pair uses
the machine's two cores alike.  With ``profile`` on, py-spy (if installed) samples the broker process during
an extra one-at-a-time round: :func:`broker_workloads` returns the aggregated samples for the report.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BODY_SIZES, Notes, Row, Sizes, alternate, median, size_label
from bench.echo import EchoServer, echo_rate, uvloop_available
from bench.nats_peer import NatsJetStream
from bench.peers import RedisServer, RespConnection, encode_command

__all__ = ["ANCHOR_CPP_SEND_SYNC", "BrokerProcess", "TcpRedis", "broker_workloads"]

SRC = Path(__file__).resolve().parents[1] / "src"
ADDR = re.compile(r"listening on (\d+\.\d+\.\d+\.\d+:\d+)")
GROUP = "broker over loopback (broker in its own process), async flush"
CEILING_GROUP = "broker over loopback: against the round-trip ceiling (echo, no work)"
#: bytes a send request adds to its body (frame and header lengths, the JSON header with the V2 extFields and
#: TAGS/UNIQ_KEY/WAIT properties: 359 for our producer's): the echo ceiling's frame is the body plus this
SEND_HEADER_BYTES = 360
ANCHOR_GROUP = "informational: against a figure from ANCHORS.md (not measured in this run)"
#: ANCHORS.md: the real RocketMQ 4.9.3 broker, official C++ client send_sync loop, 1 thread, 100 B, async flush
ANCHOR_CPP_SEND_SYNC = 2623.0
PULL_BATCH = 1000
XREAD_COUNT = 1000
#: broker.conf settings that let one pull carry PULL_BATCH messages (RocketMQ's defaults: 32 and 256 KiB)
PULL_BROKER_PROPS: dict[str, object] = {"maxTransferCountOnMessageInMemory": PULL_BATCH,
                                        "maxTransferBytesOnMessageInMemory": 4 << 20}


@dataclass(frozen=True)
class BrokerSizes:
    rounds: int
    send_n: int  # one-at-a-time sends per round
    inflight_n: int  # sends per round with 64 in flight
    batch_n: int  # messages per round through send_batch(64)
    pull_n: int  # messages pre-filled and pulled per round
    redis_n: int  # unpipelined XADDs per round
    redis_pipe_n: int  # pipelined XADDs per round
    cpp_n: int  # C++ client send_sync per round (0: no C++ rows)
    profile_s: int  # py-spy sampling seconds (0: no profile)
    small_store: bool
    sync_send_n: int  # one-at-a-time sends per round to the SYNC_FLUSH broker (an fdatasync each: ~2k/s)
    sync_inflight_n: int  # sends per round with 64 in flight to the SYNC_FLUSH broker
    sync_batch_n: int  # messages per round through send_batch(64) to the SYNC_FLUSH broker


BROKER_SIZES = {
    "smoke": BrokerSizes(rounds=1, send_n=60, inflight_n=128, batch_n=256, pull_n=256, redis_n=200,
                         redis_pipe_n=1280, cpp_n=0, profile_s=0, small_store=True, sync_send_n=20,
                         sync_inflight_n=128, sync_batch_n=256),
    "quick": BrokerSizes(rounds=3, send_n=1000, inflight_n=2560, batch_n=12_800, pull_n=20_000,
                         redis_n=2000, redis_pipe_n=32_000, cpp_n=600, profile_s=0, small_store=False,
                         sync_send_n=600, sync_inflight_n=6400, sync_batch_n=12_800),
    "full": BrokerSizes(rounds=3, send_n=3000, inflight_n=6400, batch_n=32_000, pull_n=60_000, redis_n=5000,
                        redis_pipe_n=64_000, cpp_n=2000, profile_s=8, small_store=False,
                        sync_send_n=2000, sync_inflight_n=19_200, sync_batch_n=32_000),
}


# --- the two servers -------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process *pid* (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class BrokerProcess:
    """``python -m rocketstore.cli.main serve`` on a private store, ports picked by the OS, *flush_type*
    (broker.conf's flushDiskType: ASYNC_FLUSH or SYNC_FLUSH)."""

    def __init__(self, directory: str, *, small: bool, flush_type: str = "ASYNC_FLUSH") -> None:
        self.directory = directory
        self.small = small
        self.flush_type = flush_type
        self.proc: subprocess.Popen[str] | None = None
        self.namesrv_addr = ""
        self.broker_addr = ""
        self._lines: queue.Queue[str | None] = queue.Queue()

    def start(self, timeout_s: float = 60.0) -> None:
        os.makedirs(self.directory, exist_ok=True)
        props: dict[str, object] = {"flushDiskType": self.flush_type, "mappedFileSizeCommitLog": 256 << 20,
                                    **PULL_BROKER_PROPS}
        if self.small:
            props.update(mappedFileSizeCommitLog=8 << 20, mappedFileSizeConsumeQueue=20_000 * 20,
                         maxHashSlotNum=2000, maxIndexNum=8000, preallocateCommitLog="false")
        conf = os.path.join(self.directory, "broker.conf")
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in props.items()))
        args = [sys.executable, "-m", "rocketstore.cli.main", "serve", "--store",
                os.path.join(self.directory, "store"), "--namesrv-port", "0", "--broker-port", "0", "-c", conf]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(self.directory, "serve.err"), "w"),  # noqa: SIM115
                                     text=True, env=_env())
        threading.Thread(target=self._read, args=(self.proc,), daemon=True, name="bench-serve-out").start()
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            line = None
        found = ADDR.findall(line or "")
        if len(found) != 2:
            self.stop()
            raise RuntimeError(f"rocketstore serve did not say where it listens: {line!r}; "
                               f"see {os.path.join(self.directory, 'serve.err')}")
        self.namesrv_addr, self.broker_addr = found

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.pid)

    def stop(self) -> None:
        proc = self.proc
        self.proc = None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TcpResp(RespConnection):
    """A RESP connection over TCP loopback (TCP_NODELAY), which also reads array replies (XREAD)."""

    def __init__(self, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""
        self._pos = 0

    def read_any(self) -> Any:
        while True:
            nl = self._buf.find(b"\r\n", self._pos)
            if nl >= 0:
                break
            self._more()
        if self._buf[self._pos] == 0x2A:  # * array
            n = int(self._buf[self._pos + 1 : nl])
            self._pos = nl + 2
            return None if n < 0 else [self.read_any() for _ in range(n)]
        return self.read_reply()


class TcpRedis(RedisServer):
    """A private redis-server on a TCP loopback port (and no unix socket), AOF on, RDB off."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.port = 0
        self.proc = None
        self.version = ""
        self._sock_dir = ""

    def _listen_args(self) -> list[str]:
        self.port = _free_port()
        return ["--port", str(self.port), "--bind", "127.0.0.1"]

    def _connect(self, timeout_s: float) -> RespConnection:
        return TcpResp(self.port, timeout_s=timeout_s)

    def start(self, appendfsync: str = "everysec", timeout_s: float = 15.0) -> None:
        super().start(appendfsync, timeout_s)

    def stop(self) -> None:
        proc = self.proc
        self.proc = None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.proc.pid) if self.proc is not None else float("nan")

    def connect(self) -> TcpResp:
        return TcpResp(self.port)

    def xadd_tcp_rate(self, stream: bytes, body: bytes, n: int, depth: int = 1) -> float:
        conn = self.connect()
        try:
            block = encode_command(b"XADD", stream, b"*", b"d", body) * depth
            send, read = conn.send, conn.read_reply
            rounds = max(1, n // depth)
            t0 = time.perf_counter()
            for _ in range(rounds):
                send(block)
                for _ in range(depth):
                    read()
            return rounds * depth / (time.perf_counter() - t0)
        finally:
            conn.close()

    def fill(self, stream: bytes, body: bytes, n: int) -> None:
        conn = self.connect()
        try:
            conn.call(b"DEL", stream)
            block = encode_command(b"XADD", stream, b"*", b"d", body) * 64
            for _ in range(n // 64):
                conn.send(block)
                for _ in range(64):
                    conn.read_reply()
        finally:
            conn.close()

    def xread_rate(self, stream: bytes, n: int, count: int = XREAD_COUNT) -> float:
        """Entries per second read from the start of *stream* (n entries), *count* per XREAD."""
        conn = self.connect()
        try:
            last = b"0-0"
            got = 0
            c = b"%d" % count
            t0 = time.perf_counter()
            while got < n:
                conn.send(encode_command(b"XREAD", b"COUNT", c, b"STREAMS", stream, last))
                reply = conn.read_any()
                entries = reply[0][1]
                got += len(entries)
                last = entries[-1][0]
            return got / (time.perf_counter() - t0)
        finally:
            conn.close()


# --- our client's loops ----------------------------------------------------------------------------------


class OurClient:
    """One producer and one pull consumer on one event loop (uvloop when installed, as the CLI runs)."""

    def __init__(self, namesrv_addr: str) -> None:
        from rocketstore.client import Producer, PullConsumer
        from rocketstore.remoting.transport import new_event_loop

        self.loop = new_event_loop()
        self.producer = Producer(namesrv_addr, "bench-producer")
        self.consumer = PullConsumer(namesrv_addr, "bench-consumer")

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        try:
            self.run(self.producer.close())
            self.run(self.consumer.close())
        finally:
            self.loop.close()

    async def _send_loop(self, topic: str, body: bytes, n: int) -> None:
        send = self.producer.send
        for _ in range(n):
            r = await send(topic, body, tags="TagA")
            if r.status != "SEND_OK":
                raise RuntimeError(f"send: {r.status}")

    def send_rate(self, topic: str, body: bytes, n: int) -> float:
        t0 = time.perf_counter()
        self.run(self._send_loop(topic, body, n))
        return n / (time.perf_counter() - t0)

    def inflight_rate(self, topic: str, body: bytes, n: int, depth: int = 64) -> float:
        per = max(1, n // depth)

        async def go() -> None:
            await asyncio.gather(*[self._send_loop(topic, body, per) for _ in range(depth)])

        t0 = time.perf_counter()
        self.run(go())
        return per * depth / (time.perf_counter() - t0)

    def batch_rate(self, topic: str, body: bytes, n: int, queue_id: int | None = None) -> float:
        from rocketstore.client import OutgoingMessage

        batch = [OutgoingMessage(body, tags="TagA") for _ in range(64)]
        count = max(1, n // 64)

        async def go() -> None:
            for _ in range(count):
                r = await self.producer.send_batch(topic, batch, queue_id=queue_id)
                if r.status != "SEND_OK":
                    raise RuntimeError(f"send_batch: {r.status}")

        t0 = time.perf_counter()
        self.run(go())
        return count * 64 / (time.perf_counter() - t0)

    def queue0(self, topic: str, expected: int, timeout_s: float = 60.0) -> Any:
        """The topic's queue 0 once the name server routes the topic and it holds *expected* messages."""
        from rocketstore.client import NoRouteError

        async def go() -> Any:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    queues = await self.consumer.queues(topic)
                    mq = next(q for q in queues if q.queue_id == 0)
                    if await self.consumer.max_offset(mq) >= expected:
                        return mq
                except (NoRouteError, StopIteration):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic}: queue 0 never held {expected} messages")
                await asyncio.sleep(0.05)

        return self.run(go())

    def pull_rate(self, mq: Any, n: int) -> float:
        from rocketstore.client import PullStatus

        async def go() -> int:
            pull = self.consumer.pull
            offset = got = 0
            while got < n:
                r = await pull(mq, offset, PULL_BATCH)
                if r.status != PullStatus.FOUND:
                    raise RuntimeError(f"pull at {offset}: {r.status}")
                got += len(r.messages)
                offset = r.next_begin_offset
            return got

        t0 = time.perf_counter()
        got = self.run(go())
        return got / (time.perf_counter() - t0)


# --- the official C++ client -----------------------------------------------------------------------------

_CPP_SCRIPT = r"""
import json, os, sys, time
try:
    from rocketmq.client import Message, Producer
    namesrv, topic, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    p = Producer("bench-cpp-producer")
    p.set_namesrv_addr(namesrv)
    p.start()
    body = "x" * size
    def one():
        m = Message(topic)
        m.set_tags("TagA")
        m.set_body(body)
        r = p.send_sync(m)
        if r.status.name != "OK":
            raise RuntimeError(r.status.name)
    for _ in range(20):
        one()
    t0 = time.perf_counter()
    for _ in range(n):
        one()
    print(json.dumps({"rate": n / (time.perf_counter() - t0)}), flush=True)
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
os._exit(0)
"""


def cpp_client_available() -> bool:
    try:
        out = subprocess.run([sys.executable, "-c", "import rocketmq.client"], capture_output=True, timeout=60,
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def cpp_send_rate(workdir: str, namesrv: str, topic: str, n: int, body_bytes: int) -> float:
    script = os.path.join(workdir, "cpp_send.py")
    if not os.path.exists(script):
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(_CPP_SCRIPT)
    home = os.path.join(workdir, "cpp-home")  # the C++ client logs under $HOME/logs
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home)
    proc = subprocess.run([sys.executable, script, namesrv, topic, str(n), str(body_bytes)], capture_output=True,
                          text=True, timeout=120 + n / 100, env=env, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            out = json.loads(line)
            if "rate" in out:
                return float(out["rate"])
            raise RuntimeError(f"C++ client: {out.get('error')}")
    raise RuntimeError(f"C++ client said nothing (exit {proc.returncode}): {proc.stderr[-500:]}")


# --- profile ---------------------------------------------------------------------------------------------


def _py_spy() -> str | None:
    """py-spy on PATH, or beside this interpreter (the bench extra installs it into the venv, whose bin/ a
    run as ``.venv/bin/python -m bench`` does not put on PATH)."""
    return shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))


def _short(frame: str) -> str:
    """``func (path/file.py:123)`` -> ``func (file path from the package root)`` without the line."""
    m = re.match(r"^(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    func, path = m.groups()
    for marker in ("/src/rocketstore/", "site-packages/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/src/rocketstore/":
                path = "rocketstore/" + path
            break
    return f"{func} ({path})"


def parse_py_spy_raw(path: str, top: int = 18) -> dict[str, Any]:
    """Aggregate py-spy's raw (collapsed stack) output: samples per thread, own and inclusive per function."""
    threads: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or " " not in line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            frames = stack.split(";")
            thread = "?"
            if frames and frames[0].startswith(("thread ", "process ")):
                while frames and frames[0].startswith(("thread ", "process ")):
                    head = frames.pop(0)
                    if head.startswith("thread "):
                        thread = head
                m = re.search(r'"([^"]+)"', thread)
                thread = m.group(1) if m else thread
            total += n
            threads[thread] += n
            if frames:
                own[_short(frames[-1])] += n
                for f in {_short(f) for f in frames}:
                    incl[f] += n
    return {"samples": total, "threads": threads.most_common(),
            "own": own.most_common(top), "inclusive": incl.most_common(top + 12)}


def profile_broker(client: OurClient, broker: BrokerProcess, workdir: str, topic: str, body: bytes,
                   seconds: int, notes: Notes) -> dict[str, Any] | None:
    exe = _py_spy()
    if exe is None:
        notes.skip("Broker profile: py-spy is not installed (pip install py-spy)")
        return None
    raw = os.path.join(workdir, "broker-profile.txt")
    args = [exe, "record", "--pid", str(broker.pid), "--duration", str(seconds), "--rate", "250",
            "--format", "raw", "--threads", "--output", raw, "--nonblocking"]
    spy = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        time.sleep(0.5)  # let py-spy attach before the sends start
        sent = 0
        t0 = time.perf_counter()
        cpu0 = broker.cpu_seconds()
        while spy.poll() is None and time.perf_counter() - t0 < seconds + 30:
            client.send_rate(topic, body, 200)
            sent += 200
        dt = time.perf_counter() - t0
        cpu = broker.cpu_seconds() - cpu0
        spy.wait(timeout=60)
    except BaseException:
        if spy.poll() is None:
            spy.kill()
            spy.wait(10)
        raise
    err = spy.stderr.read() if spy.stderr is not None else ""
    if spy.returncode != 0 or not os.path.exists(raw):
        notes.skip(f"Broker profile: py-spy failed ({spy.returncode}): {err.strip()[-300:]}")
        return None
    out = parse_py_spy_raw(raw)
    out.update(sends=sent, seconds=dt, rate=sent / dt, broker_cpu_per_send_us=cpu / sent * 1e6,
               sample_rate=250, duration=seconds, body_bytes=len(body))
    return out


# --- the workloads ---------------------------------------------------------------------------------------


def broker_workloads(sizes: Sizes, workdir: str, notes: Notes, add: Callable[[Row], None],
                     *, use_redis: bool = True) -> dict[str, Any] | None:
    """Run the loopback workloads at both body sizes; rows go to *add*.  Returns the broker profile (full
    mode with py-spy) or None.  Skipped with a note when redis-server is missing: every row needs it."""
    bs = BROKER_SIZES[sizes.mode]
    if not use_redis:
        notes.skip("Broker over loopback: disabled with Redis (--no-redis): every row's reference is Redis")
        return None
    if RedisServer.executable() is None:
        notes.skip("Broker over loopback: redis-server is not on PATH (apt-get install -y redis-server); "
                   "every row's reference is Redis, so the broker rows are left out")
        return None
    base = os.path.join(workdir, "broker")
    redis = TcpRedis(os.path.join(base, "redis"))
    broker = BrokerProcess(os.path.join(base, "serve"), small=bs.small_store)
    nats: NatsJetStream | None = None
    echos: list[EchoServer] = []
    client: OurClient | None = None
    profile = None
    try:
        nats = _start_nats(os.path.join(base, "nats"), notes)
        for kind in ("asyncio", "uvloop") if uvloop_available() else ("asyncio",):
            echo = EchoServer(kind)
            echo.start()
            echos.append(echo)
        try:
            redis.start("everysec")
        except (OSError, RuntimeError) as exc:
            notes.skip(f"Broker over loopback: could not start redis-server: {exc}")
            return None
        broker.start()
        notes.extra["peer:Redis (loopback rows)"] = (f"redis-server {redis.version}, TCP 127.0.0.1, AOF on, "
                                                     "appendfsync everysec, RDB off")
        client = OurClient(broker.namesrv_addr)
        cpp = bs.cpp_n > 0 and cpp_client_available()
        if bs.cpp_n > 0 and not cpp:
            notes.skip("C++ client row: PyPI rocketmq (librocketmq) does not import here")
        for body_bytes in BODY_SIZES:
            _one_size(client, broker, redis, bs, body_bytes, notes, add, cpp and body_bytes == 100, base,
                      nats, echos)
        if bs.profile_s:
            print(f"[broker profile: py-spy for {bs.profile_s} s of one-at-a-time 100 B sends]", flush=True)
            profile = profile_broker(client, broker, base, "BenchProfile", b"x" * 100, bs.profile_s, notes)
    finally:
        if client is not None:
            client.close()
        broker.stop()
        redis.stop()
        if nats is not None:
            nats.stop()
        for echo in echos:
            echo.stop()
        shutil.rmtree(base, ignore_errors=True)
    _notes(notes, bs)
    from bench.broker_sync_bench import sync_flush_workloads  # (it imports this module)

    sync_flush_workloads(bs, os.path.join(workdir, "broker-sync"), notes, add)
    return profile


def _body(body_bytes: int) -> bytes:
    return bytes((i * 7 + 3) % 251 for i in range(body_bytes))


def _start_nats(directory: str, notes: Notes) -> NatsJetStream | None:
    """The NATS JetStream peer, or None with a note saying why it is left out."""
    if NatsJetStream.executable() is None:
        notes.skip("NATS JetStream rows: nats-server is not on PATH (apt-get install -y nats-server)")
        return None
    nats = NatsJetStream(directory)
    try:
        nats.start()
    except (OSError, RuntimeError, ConnectionError) as exc:
        notes.skip(f"NATS JetStream rows: could not start nats-server: {exc}")
        nats.stop()
        return None
    notes.extra["peer:NATS JetStream (loopback rows)"] = (
        f"nats-server {nats.version} -js, TCP 127.0.0.1, one file-storage stream (JetStream syncs on a timer: "
        "an async-flush peer)")
    return nats


def _one_size(client: OurClient, broker: BrokerProcess, redis: TcpRedis, bs: BrokerSizes, body_bytes: int,
              notes: Notes, add: Callable[[Row], None], cpp: bool, workdir: str, nats: NatsJetStream | None,
              echos: list[EchoServer]) -> None:
    label = size_label(body_bytes)
    body = _body(body_bytes)
    topic = f"BenchLoop{body_bytes}"
    pull_topic = f"BenchPull{body_bytes}"
    stream = b"bench-loop-%d" % body_bytes
    rstream = b"bench-read-%d" % body_bytes
    print(f"[broker over loopback {label}]", flush=True)
    t_start = time.perf_counter()
    client.send_rate(topic, body, 50)  # warm up: route, topic creation, connection
    redis.xadd_tcp_rate(stream, body, 50)
    subject = f"bench.loop{body_bytes}"
    if nats is not None:
        nats.publish_rate(subject, body, 50)

    cpu: dict[str, list[float]] = {"broker": [], "client": [], "redis": [], "rclient": []}

    def ours1() -> float:
        b0, c0 = broker.cpu_seconds(), time.process_time()
        rate = client.send_rate(topic, body, bs.send_n)
        cpu["broker"].append((broker.cpu_seconds() - b0) / bs.send_n)
        cpu["client"].append((time.process_time() - c0) / bs.send_n)
        return rate

    def redis1() -> float:
        r0, c0 = redis.cpu_seconds(), time.process_time()
        rate = redis.xadd_tcp_rate(stream, body, bs.redis_n)
        cpu["redis"].append((redis.cpu_seconds() - r0) / bs.redis_n)
        cpu["rclient"].append((time.process_time() - c0) / bs.redis_n)
        return rate

    sides: dict[str, Callable[[], Any]] = {"ours1": ours1, "redis1": redis1}
    if cpp:
        sides["cpp"] = lambda: cpp_send_rate(workdir, broker.namesrv_addr, f"BenchCpp{body_bytes}", bs.cpp_n,
                                             body_bytes)
    if nats is not None:
        sides["nats1"] = lambda: nats.publish_rate(subject, body, bs.redis_n)
    frame = body_bytes + SEND_HEADER_BYTES
    for echo in echos:
        sides[f"echo-{echo.kind}"] = functools.partial(echo_rate, echo, frame, bs.redis_n)
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    add(Row(GROUP, f"send {label}, one at a time (Producer.send) vs Redis XADD unpipelined", "msgs/s",
            m["ours1"], "Redis XADD over TCP loopback, appendfsync everysec, 1 in flight", m["redis1"], 1.0))
    if nats is not None:
        add(Row(GROUP, f"send {label}, one at a time (Producer.send) vs NATS JetStream publish, 1 in flight",
                "msgs/s", m["ours1"], "NATS JetStream publish (acknowledged) over TCP loopback, 1 in flight",
                m["nats1"]))
    for echo in echos:
        add(Row(CEILING_GROUP, f"send {label}, one at a time (Producer.send) vs an echo round trip ({echo.kind})",
                "msgs/s", m["ours1"], f"{frame} B echoed over TCP loopback, {echo.kind} Protocol server "
                f"process and client, 1 in flight", m[f"echo-{echo.kind}"]))
    if cpu["broker"]:
        notes.extra[f"cpu per one-at-a-time send {label}"] = {k: median(v) * 1e6 for k, v in cpu.items()}
    if cpp:
        add(Row(GROUP, f"send {label}, official C++ client send_sync loop vs Redis XADD unpipelined", "msgs/s",
                m["cpp"], "Redis XADD over TCP loopback, appendfsync everysec, 1 in flight", m["redis1"]))
        add(Row(ANCHOR_GROUP, f"send {label}, official C++ client send_sync loop: our broker vs the real "
                "RocketMQ 4.9.3 broker (ANCHORS.md)", "msgs/s", m["cpp"],
                "ANCHORS.md: real RocketMQ 4.9.3 broker, C++ client send_sync, 1 thread, async flush "
                "(not this run)", ANCHOR_CPP_SEND_SYNC))

    sides = {
        "ours64": lambda: client.inflight_rate(topic, body, bs.inflight_n, 64),
        "batch": lambda: client.batch_rate(topic, body, bs.batch_n),
        "redis64": lambda: redis.xadd_tcp_rate(stream, body, bs.redis_pipe_n, depth=64),
    }
    if nats is not None:
        sides["nats64"] = lambda: nats.publish_rate(subject, body, bs.redis_pipe_n, depth=64)
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    ref64 = "Redis XADD over TCP loopback, appendfsync everysec, 64-deep pipeline"
    add(Row(GROUP, f"send {label}, 64 in flight on one connection (asyncio) vs Redis XADD pipeline 64", "msgs/s",
            m["ours64"], ref64, m["redis64"]))
    add(Row(GROUP, f"send_batch {label}, 64 per batch vs Redis XADD pipeline 64", "msgs/s", m["batch"], ref64,
            m["redis64"], 1.0))
    if nats is not None:
        nref64 = "NATS JetStream publish over TCP loopback, 64 acknowledgements in flight"
        add(Row(GROUP, f"send {label}, 64 in flight on one connection (asyncio) vs NATS JetStream publish, "
                "64 in flight", "msgs/s", m["ours64"], nref64, m["nats64"]))
        add(Row(GROUP, f"send_batch {label}, 64 per batch vs NATS JetStream publish, 64 in flight", "msgs/s",
                m["batch"], nref64, m["nats64"]))

    # consume: pre-fill (untimed) queue 0 of a topic and a stream with the same count, then read it all
    n = bs.pull_n
    filled = 0
    while filled < n:
        client.batch_rate(pull_topic, body, 64 * 50, queue_id=0)
        filled += 64 * 50
    mq = client.queue0(pull_topic, n)
    redis.fill(rstream, body, (n // 64 + 1) * 64)
    sides = {"pull": lambda: client.pull_rate(mq, n), "xread": lambda: redis.xread_rate(rstream, n)}
    fetch_n = n - n % PULL_BATCH
    read_subject = f"bench.read{body_bytes}"
    if nats is not None and fetch_n:
        nats.fill(read_subject, body, fetch_n)
        sides["fetch"] = lambda: nats.fetch_rate(read_subject, fetch_n, PULL_BATCH)
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    pull_name = (f"pull {label}, {PULL_BATCH} per pull (broker's maxTransferCount/BytesOnMessageInMemory raised "
                 f"from 32 / 256 KiB to {PULL_BATCH} / 4 MiB), decoded")
    add(Row(GROUP, f"{pull_name}, vs Redis XREAD {XREAD_COUNT} per call", "msgs/s", m["pull"],
            f"Redis XREAD COUNT {XREAD_COUNT} over TCP loopback (parsed)", m["xread"], 1.0))
    if "fetch" in m:
        add(Row(GROUP, f"{pull_name}, vs NATS JetStream fetch of {PULL_BATCH}", "msgs/s", m["pull"],
                f"NATS JetStream pull consumer (ack none), batch {PULL_BATCH} over TCP loopback, payloads "
                "collected", m["fetch"]))
    print(f"  ({time.perf_counter() - t_start:.1f} s)", flush=True)


def _notes(notes: Notes, bs: BrokerSizes) -> None:
    notes.caveat(
        "Broker over loopback: `python -m rocketstore.cli.main serve` (name server + broker in one process, "
        "uvloop when installed) on a fresh store in the temp directory, ASYNC_FLUSH, 256 MiB commitlog "
        "segments, otherwise RocketMQ's defaults; our asyncio client (`rocketstore.client`, uvloop) in the "
        "bench process. Redis: a second private redis-server on a TCP loopback port (not the unix socket "
        "the store rows use), AOF on with appendfsync everysec, spoken to by a RESP client over a raw "
        "socket with TCP_NODELAY. Each server is its own process and each client runs in the bench process, "
        f"one side at a time; {bs.rounds} rounds per workload, order reversed every other round, medians.")
    notes.caveat(
        "Broker workloads: topics auto-created (4 queues), messages with tag `TagA` and the client's "
        "UNIQ_KEY (indexed by the broker), no user keys; Redis XADD `* d <body>` to one stream. '64 in "
        "flight': 64 coroutines sending in a loop over the producer's one multiplexed connection. Pull: "
        f"{PULL_BATCH} per request from one queue filled beforehand, the broker's "
        f"maxTransferCountOnMessageInMemory raised from RocketMQ's default 32 to {PULL_BATCH} and "
        "maxTransferBytesOnMessageInMemory from 256 KiB to 4 MiB in the bench's broker.conf (both are "
        "ordinary RocketMQ broker settings; the send rows do not use them), records decoded by the client "
        f"into StoredMessage objects, against XREAD COUNT {XREAD_COUNT} with the reply parsed into Python "
        "lists.")
    notes.caveat(
        "NATS JetStream rows: a private `nats-server -js` (Debian's package) on a TCP loopback port, one "
        "file-storage stream, spoken to over a raw socket with pre-encoded PUB frames (no client library), "
        "each publish acknowledged by JetStream ({\"stream\":..,\"seq\":..} on the reply subject), one or "
        f"64 in flight; the read side is a durable pull consumer with ack_policy none, {PULL_BATCH} messages "
        "per MSG.NEXT request, payloads collected into a list. Informational rows (no target in issue 7).")
    notes.caveat(
        f"Echo ceiling: a frame of the body + {SEND_HEADER_BYTES} B (the size of our send request) written by "
        "an asyncio.Protocol client in the bench process and echoed back by an asyncio.Protocol server in its "
        "own process, one in flight, a Future per round trip; once on the standard loop and once on uvloop "
        "(both sides). No parsing, no work: the most a Python client and server can do one round trip at a "
        "time on this machine.")
    if bs.cpp_n:
        notes.caveat(
            "C++ client rows: the official client (PyPI `rocketmq` 0.4.4) in a subprocess, `send_sync` of a "
            f"new Message in a loop of {bs.cpp_n:,} after 20 warm-up sends, timed inside that process. The "
            "row against the real RocketMQ broker divides by the figure in /work/shared/ANCHORS.md "
            f"({ANCHOR_CPP_SEND_SYNC:,.0f} msgs/s, measured on this machine class, not in this run): it "
            "only gives the order of magnitude.")

