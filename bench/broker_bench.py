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
  both are broker settings, and this bench's broker.conf raises them
  (:data:`bench.broker_servers.PULL_BROKER_PROPS`) so that one pull may carry as many messages as one XREAD.
  The row label says so.

Each also against NATS JetStream when ``nats-server`` is installed (bench/nats_peer.py: acknowledged publishes
one or 64 in flight, pull-consumer fetches of 1000), and the one-at-a-time send against the round-trip
ceiling: an echo of a frame of the same size between two Python processes, on asyncio and on uvloop
(bench/echo.py).

At 100 B, if the official C++ client (PyPI ``rocketmq``) imports, its ``send_sync`` loop (in a subprocess)
joins the one-at-a-time rounds; its rate is also set against the real RocketMQ broker's figure from
/work/shared/ANCHORS.md, as an informational row (not measured in this run).  The real 4.9.3 broker measured
in the same run, against the same C++ and Java clients, is bench/java_peer.py's (when $ROCKETSTORE_JAVA_PEERS
names a scripts/java-peers/build.sh build; the runner calls it after these workloads).

The three send workloads run once more, after those processes have stopped, against a second broker with
flushDiskType=SYNC_FLUSH (a send answered after the group commit's fdatasync) and a second redis-server with
appendfsync always (bench/broker_sync_bench.py): informational rows, no target.

Both servers run as separate processes and both clients in this process, one at a time, so each pair uses
the machine's two cores alike.  With ``profile`` on, py-spy (if installed) samples the broker process during
an extra one-at-a-time round: :func:`broker_workloads` returns the aggregated samples for the report.

This module holds the workloads and our client's loops (:class:`OurClient`); the two servers are in
bench/broker_servers.py, the C++ client's runner in bench/cpp_client.py, the py-spy profile in
bench/profile_broker.py.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.broker_servers import PULL_BATCH, XREAD_COUNT, BrokerProcess, TcpRedis
from bench.common import BODY_SIZES, Notes, Row, Sizes, alternate, median, size_label
from bench.cpp_client import cpp_client_available, cpp_send_rate
from bench.echo import EchoServer, echo_rate, uvloop_available
from bench.nats_peer import NatsJetStream
from bench.peers import RedisServer
from bench.profile_broker import profile_broker

__all__ = ["ANCHOR_CPP_SEND_SYNC", "BrokerSizes", "OurClient", "broker_workloads"]

GROUP = "broker over loopback (broker in its own process), async flush"
CEILING_GROUP = "broker over loopback: against the round-trip ceiling (echo, no work)"
#: bytes a send request adds to its body (frame and header lengths, the JSON header with the V2 extFields and
#: TAGS/UNIQ_KEY/WAIT properties: 359 for our producer's): the echo ceiling's frame is the body plus this
SEND_HEADER_BYTES = 360
ANCHOR_GROUP = "informational: against a figure from ANCHORS.md (not measured in this run)"
BUSY_GROUP = "broker over loopback with busy polling (opt-in: busyPollMicros on the broker, the client's loop too)"
#: the busy-poll window of the opt-in rows, on both sides (remoting/busy_poll.py)
BUSY_POLL_US = 500
#: ANCHORS.md: the real RocketMQ 4.9.3 broker, official C++ client send_sync loop, 1 thread, 100 B, async flush
ANCHOR_CPP_SEND_SYNC = 2623.0


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


# --- our client's loops ----------------------------------------------------------------------------------


class OurClient:
    """One producer and one pull consumer on one event loop (uvloop when installed, as the CLI runs)."""

    def __init__(self, namesrv_addr: str, busy_poll_us: int = 0) -> None:
        from rocketstore.client import Producer, PullConsumer
        from rocketstore.remoting import busy_poll
        from rocketstore.remoting.transport import new_event_loop

        self.loop = new_event_loop()
        busy_poll.enable(self.loop, busy_poll_us)
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
    # the same broker and client with busy polling on, measured in the same rounds as the defaults
    busy_broker = BrokerProcess(os.path.join(base, "serve-busy"), small=bs.small_store, busy_poll_us=BUSY_POLL_US)
    nats: NatsJetStream | None = None
    echos: list[EchoServer] = []
    client: OurClient | None = None
    busy_client: OurClient | None = None
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
        notes.extra["machine:event loop of our broker and client (loopback rows)"] = _event_loop_used()
        client = OurClient(broker.namesrv_addr)
        busy_broker.start()
        busy_client = OurClient(busy_broker.namesrv_addr, BUSY_POLL_US)
        cpp = bs.cpp_n > 0 and cpp_client_available()
        if bs.cpp_n > 0 and not cpp:
            notes.skip("C++ client row: PyPI rocketmq (librocketmq) does not import here")
        for body_bytes in BODY_SIZES:
            _one_size(client, broker, redis, bs, body_bytes, notes, add, cpp and body_bytes == 100, base,
                      nats, echos, busy_client)
        if bs.profile_s:
            print(f"[broker profile: py-spy for {bs.profile_s} s of one-at-a-time 100 B sends]", flush=True)
            profile = profile_broker(client, broker, base, "BenchProfile", b"x" * 100, bs.profile_s, notes)
    finally:
        for c in (client, busy_client):
            if c is not None:
                c.close()
        broker.stop()
        busy_broker.stop()
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


def _event_loop_used() -> str:
    """Which loop ``rocketstore serve`` and our client run on here: the kind the product's new_event_loop
    makes (uvloop when installed, the product's optional speed-up rocketstore[fast] that the bench extra
    installs, unless $ROCKETSTORE_EVENT_LOOP says otherwise; the test suite pins asyncio), asked, not assumed."""
    from rocketstore.remoting.transport import EVENT_LOOP_ENV, new_event_loop

    loop = new_event_loop()
    try:
        on_uvloop = type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()
    if not on_uvloop:
        chosen = os.environ.get(EVENT_LOOP_ENV)
        return f"asyncio ({EVENT_LOOP_ENV}={chosen})" if chosen else "asyncio (uvloop not installed)"
    from importlib import metadata

    return f"uvloop {metadata.version('uvloop')} (rocketstore[fast], installed by the bench extra)"


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
              echos: list[EchoServer], busy: OurClient | None) -> None:
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
    if busy is not None:
        busy.send_rate(topic, body, 50)

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
    if busy is not None:
        sides["busy1"] = lambda: busy.send_rate(topic, body, bs.send_n)
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
    if busy is not None:
        add(Row(BUSY_GROUP, f"send {label}, one at a time, busy polling {BUSY_POLL_US} µs vs Redis XADD "
                "unpipelined", "msgs/s", m["busy1"], "Redis XADD over TCP loopback, appendfsync everysec, 1 in "
                "flight", m["redis1"]))
        add(Row(BUSY_GROUP, f"send {label}, one at a time, busy polling {BUSY_POLL_US} µs vs the default (off)",
                "msgs/s", m["busy1"], "the same send without busy polling (the target row above)", m["ours1"]))
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
    if busy is not None:
        sides["busybatch"] = lambda: busy.batch_rate(topic, body, bs.batch_n)
    if nats is not None:
        sides["nats64"] = lambda: nats.publish_rate(subject, body, bs.redis_pipe_n, depth=64)
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    ref64 = "Redis XADD over TCP loopback, appendfsync everysec, 64-deep pipeline"
    add(Row(GROUP, f"send {label}, 64 in flight on one connection (asyncio) vs Redis XADD pipeline 64", "msgs/s",
            m["ours64"], ref64, m["redis64"]))
    add(Row(GROUP, f"send_batch {label}, 64 per batch vs Redis XADD pipeline 64", "msgs/s", m["batch"], ref64,
            m["redis64"], 1.0))
    if busy is not None:
        add(Row(BUSY_GROUP, f"send_batch {label}, 64 per batch, busy polling {BUSY_POLL_US} µs vs Redis XADD "
                "pipeline 64", "msgs/s", m["busybatch"], ref64, m["redis64"]))
        add(Row(BUSY_GROUP, f"send_batch {label}, 64 per batch, busy polling {BUSY_POLL_US} µs vs the default "
                "(off)", "msgs/s", m["busybatch"], "the same send_batch without busy polling", m["batch"]))
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
        f"Busy-polling rows (informational, opt-in): a second `rocketstore serve` with busyPollMicros="
        f"{BUSY_POLL_US} in its broker.conf and a second client whose event loop busy-polls as long "
        "(`rocketstore.remoting.busy_poll.enable(loop, 500)`), measured in the same rounds as the default "
        "pair. Each loop keeps polling its sockets for the window after its last read or write instead of "
        "sleeping in epoll: a core busy while traffic flows, against the cost of a wake-up on this VM. The "
        "target rows are the defaults (off).")
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
            "only gives the order of magnitude; the same-run rows against the real broker are "
            "bench/java_peer.py's (with $ROCKETSTORE_JAVA_PEERS).")
