"""The broker's send workloads under SYNC_FLUSH: a second ``rocketstore serve`` with flushDiskType=SYNC_FLUSH
(a send answered once the group commit has fdatasync'ed its record) against a second redis-server with
appendfsync always, over TCP loopback, one at a time, 64 in flight and in batches of 64.  Informational
rows (no target); run by :func:`bench.broker_bench.broker_workloads` after its own processes stopped.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from bench.broker_bench import BrokerSizes, OurClient, _body
from bench.broker_servers import BrokerProcess, TcpRedis
from bench.common import BODY_SIZES, Notes, Row, alternate, median, size_label

__all__ = ["SYNC_GROUP", "sync_flush_workloads"]

SYNC_GROUP = "broker over loopback (broker in its own process), sync flush"

def sync_flush_workloads(bs: BrokerSizes, workdir: str, notes: Notes, add: Callable[[Row], None]) -> None:
    """The send workloads again against a second broker, SYNC_FLUSH, and a second redis-server, appendfsync
    always: fresh processes, started after the async-flush ones have stopped, so neither pair shares the
    machine with the other."""
    redis = TcpRedis(os.path.join(workdir, "redis"))
    broker = BrokerProcess(os.path.join(workdir, "serve"), small=bs.small_store, flush_type="SYNC_FLUSH")
    client: OurClient | None = None
    try:
        try:
            redis.start("always")
        except (OSError, RuntimeError) as exc:
            notes.skip(f"Broker over loopback, sync flush: could not start redis-server: {exc}")
            return
        broker.start()
        notes.extra["peer:Redis (sync-flush loopback rows)"] = (
            f"redis-server {redis.version}, TCP 127.0.0.1, AOF on, appendfsync always, RDB off")
        client = OurClient(broker.namesrv_addr)
        for body_bytes in BODY_SIZES:
            _sync_one_size(client, redis, bs, body_bytes, add)
    finally:
        if client is not None:
            client.close()
        broker.stop()
        redis.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    notes.caveat(
        "Broker over loopback, sync flush: a second `rocketstore serve` as above but with "
        "flushDiskType=SYNC_FLUSH: a send is answered only once the group commit has fdatasync'ed its record "
        "(the sends waiting on the broker's event loop share one fdatasync); against a second private "
        "redis-server on TCP loopback with appendfsync always, which fdatasyncs the AOF once per event-loop "
        "pass, before it writes that pass's replies (so a 64-deep pipeline shares one sync). Sends only, "
        f"{bs.rounds} rounds per workload alternated as above, medians; informational rows (no target).")


def _sync_one_size(client: OurClient, redis: TcpRedis, bs: BrokerSizes, body_bytes: int,
                   add: Callable[[Row], None]) -> None:
    label = size_label(body_bytes)
    body = _body(body_bytes)
    topic = f"BenchSync{body_bytes}"
    stream = b"bench-sync-%d" % body_bytes
    print(f"[broker over loopback {label}, sync flush]", flush=True)
    t_start = time.perf_counter()
    client.send_rate(topic, body, 20)  # warm up: route, topic creation, connection
    redis.xadd_tcp_rate(stream, body, 50)
    sides: dict[str, Callable[[], Any]] = {
        "ours1": lambda: client.send_rate(topic, body, bs.sync_send_n),
        "redis1": lambda: redis.xadd_tcp_rate(stream, body, bs.redis_n),
    }
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    add(Row(SYNC_GROUP, f"sync send {label}, one at a time (Producer.send) vs Redis XADD unpipelined", "msgs/s",
            m["ours1"], "Redis XADD over TCP loopback, appendfsync always, 1 in flight", m["redis1"]))
    sides = {
        "ours64": lambda: client.inflight_rate(topic, body, bs.sync_inflight_n, 64),
        "batch": lambda: client.batch_rate(topic, body, bs.sync_batch_n),
        "redis64": lambda: redis.xadd_tcp_rate(stream, body, bs.redis_pipe_n, depth=64),
    }
    m = {k: median(v) for k, v in alternate(bs.rounds, sides).items()}
    ref64 = "Redis XADD over TCP loopback, appendfsync always, 64-deep pipeline"
    add(Row(SYNC_GROUP, f"sync send {label}, 64 in flight on one connection (asyncio) vs Redis XADD pipeline 64",
            "msgs/s", m["ours64"], ref64, m["redis64"]))
    add(Row(SYNC_GROUP, f"sync send_batch {label}, 64 per batch vs Redis XADD pipeline 64", "msgs/s", m["batch"],
            ref64, m["redis64"]))
    print(f"  ({time.perf_counter() - t_start:.1f} s)", flush=True)
