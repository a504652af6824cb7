"""The real RocketMQ 4.9.3 broker in the same run: our broker and 4.9.3's, the same load generator against each.

RocketMQ's Java side cannot come from Maven Central on these machines; ``scripts/java-peers/build.sh`` builds
4.9.3's name server, broker and client from source into a directory (``run.sh``, ``classes``,
``classpath.txt``; docs/java-peers.md).  When ``$ROCKETSTORE_JAVA_PEERS`` names such a directory, this module
starts, per flush type (ASYNC_FLUSH, then SYNC_FLUSH), a 4.9.3 name server and broker
(:class:`JavaBroker`) and a ``rocketstore serve`` (:class:`bench.broker_servers.BrokerProcess`) beside it, both
on fresh stores in the bench's work directory, and runs the same clients against each in alternated rounds:

* the official C++ client's ``send_sync`` loop, 100 B, one thread (bench/cpp_client.py; async flush only);
* a Java load driver of our own (bench/java/BenchSendLoop.java, compiled here with javac against the build's
  classes): 4.9.3's ``DefaultMQProducer`` sending synchronously in a loop, 1 and 8 threads, 100 B and 1 KiB.
  One driver process per broker, kept for the whole phase, commands on its stdin, each loop timed inside it.

Informational rows (issue 7 sets no target against the Java broker).  Without the variable, or with a
directory that is not such a build, the rows are skipped with a note saying how to get them.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.broker_servers import BrokerProcess, _cpu_seconds, _free_port
from bench.common import Notes, Row, alternate, median, size_label, stop_process
from bench.cpp_client import cpp_client_available, cpp_send_rate

__all__ = ["ENV", "GROUP", "JAVA_SIZES", "JavaBroker", "JavaBuild", "JavaSendDriver", "SYNC_GROUP",
           "broker_conf", "find_build", "java_peer_workloads"]

ENV = "ROCKETSTORE_JAVA_PEERS"
GROUP = "against the real RocketMQ 4.9.3 broker (same run, same client), async flush"
SYNC_GROUP = "against the real RocketMQ 4.9.3 broker (same run, same client), sync flush"
REFERENCE = "RocketMQ 4.9.3 broker (same run)"
DRIVER_SOURCE = Path(__file__).resolve().parent / "java" / "BenchSendLoop.java"
DRIVER_CLASS = "BenchSendLoop"
HOW_TO = ("scripts/java-peers/build.sh /work/.mirror/apache+rocketmq/repo /tmp/rocketmq-java-4.9.3 builds one "
          f"(docs/java-peers.md); then {ENV}=/tmp/rocketmq-java-4.9.3 python -m bench ...")
#: the Java driver's (threads, body bytes) workloads, each run against both brokers
JAVA_LOADS = ((1, 100), (1, 1024), (8, 100), (8, 1024))


@dataclass(frozen=True)
class JavaSizes:
    rounds: int
    cpp_n: int  # C++ client send_sync per round (0: no C++ rows)
    send_n: int  # Java driver sends per round, one thread
    threads_n: int  # Java driver sends per round, 8 threads
    sync_send_n: int  # the same to the SYNC_FLUSH brokers
    sync_threads_n: int
    drain_n: int  # messages pre-filled, then taken by a Java push consumer per round (async flush only)
    small_store: bool


JAVA_SIZES = {
    "smoke": JavaSizes(rounds=1, cpp_n=0, send_n=40, threads_n=80, sync_send_n=20, sync_threads_n=40,
                       drain_n=200, small_store=True),
    "quick": JavaSizes(rounds=3, cpp_n=600, send_n=1000, threads_n=4000, sync_send_n=400, sync_threads_n=1600,
                       drain_n=20_000, small_store=False),
    "full": JavaSizes(rounds=3, cpp_n=2000, send_n=3000, threads_n=12_000, sync_send_n=1500,
                      sync_threads_n=6000, drain_n=60_000, small_store=False),
}


@dataclass(frozen=True)
class JavaBuild:
    """A directory made by scripts/java-peers/build.sh."""

    root: str

    @property
    def run_sh(self) -> str:
        return os.path.join(self.root, "run.sh")

    @property
    def classes(self) -> str:
        return os.path.join(self.root, "classes")

    def classpath(self) -> str:
        with open(os.path.join(self.root, "classpath.txt"), encoding="utf-8") as fh:
            return f"{self.classes}:{fh.read().strip()}"


def find_build(environ: dict[str, str] | None = None) -> tuple[JavaBuild | None, str]:
    """The build $ROCKETSTORE_JAVA_PEERS names, or None and the reason the rows are left out."""
    env = os.environ if environ is None else environ
    root = env.get(ENV, "").strip()
    if not root:
        return None, f"RocketMQ 4.9.3 broker rows (same run): {ENV} is not set; {HOW_TO}"
    missing = [p for p in ("run.sh", "classes", "classpath.txt") if not os.path.exists(os.path.join(root, p))]
    if missing:
        return None, (f"RocketMQ 4.9.3 broker rows (same run): {ENV}={root} is not a java-peers build (no "
                      f"{', '.join(missing)}); {HOW_TO}")
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return None, (f"RocketMQ 4.9.3 broker rows (same run): {tool} is not on PATH (a Java 17 JDK is "
                          "needed)")
    return JavaBuild(os.path.abspath(root)), ""


def broker_conf(directory: str, port: int, flush_type: str, *, small: bool) -> dict[str, object]:
    """The 4.9.3 broker's settings: RocketMQ's defaults but for the flush type, the ports, the store under
    *directory* and the commitlog segment size (the same as our bench broker's)."""
    store = os.path.join(directory, "store")
    return {
        "brokerClusterName": "BenchCluster",
        "brokerName": "bench-java-broker",
        "brokerId": 0,
        "brokerIP1": "127.0.0.1",
        "listenPort": port,
        "haListenPort": port + 1,
        "storePathRootDir": store,
        "storePathCommitLog": os.path.join(store, "commitlog"),
        "autoCreateTopicEnable": "true",
        "flushDiskType": flush_type,
        "mappedFileSizeCommitLog": (8 << 20) if small else (256 << 20),
    }


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def broker_port(tries: int = 50) -> int:
    """A port P with P, P - 2 (4.9.3's VIP channel, always the listen port - 2) and P + 1 (HA) free."""
    for _ in range(tries):
        p = _free_port()
        if p > 1026 and _port_free(p - 2) and _port_free(p + 1):
            return p
    raise RuntimeError("no free port P with P - 2 and P + 1 free")


class _JavaProcess:
    """One of the build's programs (run.sh MAIN ARGS), its stdout lines collected by a thread."""

    def __init__(self, build: JavaBuild, home: str, args: list[str], log: str, *, extra_cp: str = "",
                 stdin: bool = False) -> None:
        env = dict(os.environ, JHOME=home)
        if extra_cp:
            env["EXTRA_CP"] = extra_cp
        os.makedirs(home, exist_ok=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen([build.run_sh, *args],
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=open(log, "w"),  # noqa: SIM115
                                     text=True, env=env)
        threading.Thread(target=self._read, daemon=True, name="bench-java-out").start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        seen: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                said = "".join(seen)[-500:]
                raise RuntimeError(f"{what}: not ready (exit {self.proc.poll()}); it said {said!r}")
            if predicate(line):
                return line
            seen.append(line)

    def stop(self) -> None:
        stop_process(self.proc, 30.0)


class JavaBroker:
    """4.9.3's name server and broker (*flush_type*) on fresh stores under *directory*."""

    def __init__(self, build: JavaBuild, directory: str, *, flush_type: str = "ASYNC_FLUSH",
                 small: bool = False) -> None:
        self.build = build
        self.directory = directory
        self.flush_type = flush_type
        self.small = small
        self.namesrv_addr = ""
        self.broker_addr = ""
        self._namesrv: _JavaProcess | None = None
        self._broker: _JavaProcess | None = None

    def start(self, timeout_s: float = 90.0) -> None:
        d = self.directory
        os.makedirs(d, exist_ok=True)
        home = os.path.join(d, "home")
        ns_port = _free_port()
        with open(os.path.join(d, "ns.properties"), "w", encoding="utf-8") as fh:
            fh.write(f"listenPort={ns_port}\n")
        self._namesrv = _JavaProcess(self.build, home, ["org.apache.rocketmq.namesrv.NamesrvStartup", "-c",
                                                        os.path.join(d, "ns.properties")],
                                     os.path.join(d, "namesrv.err"))
        self._namesrv.wait_for(lambda s: "boot success" in s, "4.9.3 name server", timeout_s)
        self.namesrv_addr = f"127.0.0.1:{ns_port}"
        port = broker_port()
        conf = os.path.join(d, "broker.conf")
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in broker_conf(d, port, self.flush_type,
                                                                    small=self.small).items()))
        args = ["org.apache.rocketmq.broker.BrokerStartup", "-n", self.namesrv_addr, "-c", conf]
        self._broker = _JavaProcess(self.build, home, args, os.path.join(d, "broker.err"))
        self._broker.wait_for(lambda s: "boot success" in s, "4.9.3 broker", timeout_s)
        self.broker_addr = f"127.0.0.1:{port}"

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self._broker.proc.pid) if self._broker is not None else float("nan")

    def stop(self) -> None:
        for p in (self._broker, self._namesrv):
            if p is not None:
                p.stop()
        self._broker = self._namesrv = None


def compile_driver(build: JavaBuild, out_dir: str) -> str:
    """javac bench/java/BenchSendLoop.java against the build's classes into *out_dir*; returns *out_dir*."""
    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.run(["javac", "-nowarn", "-d", out_dir, "-cp", build.classpath(), str(DRIVER_SOURCE)],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"javac {DRIVER_SOURCE.name}: {proc.stderr[-800:]}")
    return out_dir


class JavaSendDriver:
    """BenchSendLoop in its own JVM, one producer against *namesrv*, fed commands on its stdin."""

    def __init__(self, build: JavaBuild, classes_dir: str, directory: str, namesrv: str, name: str) -> None:
        self.name = name
        os.makedirs(directory, exist_ok=True)
        self._p = _JavaProcess(build, os.path.join(directory, "home"), [DRIVER_CLASS, namesrv],
                               os.path.join(directory, "driver.err"), extra_cp=classes_dir, stdin=True)
        self._p.wait_for(lambda s: s.startswith("{"), f"Java driver against {name}", 60.0)

    def send_rate(self, topic: str, n: int, body_bytes: int, threads: int) -> float:
        proc = self._p.proc
        assert proc.stdin is not None
        proc.stdin.write(f"send {topic} {n} {body_bytes} {threads}\n")
        proc.stdin.flush()
        return self._answer(120 + n / 50)

    def drain_rate(self, topic: str, n: int, group: str) -> float:
        """Messages per second a new push consumer group takes *n* messages of *topic* from the first offset,
        timed from the first message it is handed to the *n*-th."""
        proc = self._p.proc
        assert proc.stdin is not None
        proc.stdin.write(f"drain {topic} {n} {group}\n")
        proc.stdin.flush()
        return self._answer(180 + n / 100)

    def _answer(self, timeout_s: float) -> float:
        out = json.loads(self._p.wait_for(lambda s: s.startswith("{"), f"Java driver against {self.name}",
                                          timeout_s))
        if "rate" not in out:
            raise RuntimeError(f"Java driver against {self.name}: {out.get('error')}")
        return float(out["rate"])

    def close(self) -> None:
        proc = self._p.proc
        if proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
                proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._p.stop()


def _java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.stderr or out.stdout).splitlines()[0].strip() if (out.stderr or out.stdout) else "?"


def java_peer_workloads(mode: str, workdir: str, notes: Notes, add: Callable[[Row], None]) -> None:
    """Both flush types in turn: our broker and 4.9.3's side by side, the same clients alternated against
    each.  Skipped with a note when $ROCKETSTORE_JAVA_PEERS names no build."""
    build, why = find_build()
    if build is None:
        notes.skip(why)
        return
    js = JAVA_SIZES[mode]
    base = os.path.join(workdir, "broker-java")
    try:
        try:
            classes = compile_driver(build, os.path.join(base, "driver-classes"))
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            notes.skip(f"RocketMQ 4.9.3 broker rows (same run): {exc}")
            return
        cpp = js.cpp_n > 0 and cpp_client_available()
        if js.cpp_n > 0 and not cpp:
            notes.skip("C++ client against the RocketMQ 4.9.3 broker: PyPI rocketmq (librocketmq) does not "
                       "import")
        notes.extra["peer:RocketMQ 4.9.3 broker (same-run rows)"] = (
            f"scripts/java-peers/build.sh build at {build.root}, {_java_version()}, run.sh's -Xms256m -Xmx512m")
        for flush_type in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            try:
                _one_flush_type(build, classes, os.path.join(base, flush_type.lower()), js, flush_type,
                                cpp and flush_type == "ASYNC_FLUSH", notes, add)
            except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
                notes.skip(f"RocketMQ 4.9.3 broker rows (same run), {flush_type}: {exc}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    notes.caveat(
        "RocketMQ 4.9.3 broker rows (same run): 4.9.3's own name server and broker, built from source by "
        "scripts/java-peers/build.sh (DLedger cut out, nothing else changed; netty 4.1.48 and fastjson 1.2.48 "
        "where 4.9.3 pins 4.1.65 and 1.2.69), started by the bench on a fresh store with RocketMQ's defaults "
        "but for flushDiskType, the ports and 256 MiB commitlog segments (the same as our bench broker), "
        "beside a fresh `rocketstore serve` with the same flush type; both idle while the other is measured. "
        "The same client runs against each in alternated rounds (order reversed every other round), "
        f"{js.rounds} rounds, medians: the official C++ client's send_sync loop (100 B, async flush only) and "
        "our Java driver bench/java/BenchSendLoop.java, 4.9.3's DefaultMQProducer.send in a loop on 1 or 8 "
        "threads (VIP channel off, so both brokers take sends on their main port), one driver JVM per broker "
        f"kept for the phase, both brokers warmed up first ({js.threads_n:,} sends on 8 threads), then an "
        "untimed round per workload on its own topic (4.9.3 took a topic it had just auto-created at about "
        "half its later rate for the first thousand sends on this machine), timed inside the JVM. Consume "
        f"(async flush only): a topic pre-filled with {js.drain_n:,} messages of 100 B (4 queues), then per "
        "round a new "
        "DefaultMQPushConsumer group (client defaults: pull batch 32, 20 consume threads, one message per "
        "listener call) from the first offset, timed from the first message handed to the listener to the "
        "last. Informational (no target).")


def _one_flush_type(build: JavaBuild, classes: str, directory: str, js: JavaSizes, flush_type: str, cpp: bool,
                    notes: Notes, add: Callable[[Row], None]) -> None:
    sync = flush_type == "SYNC_FLUSH"
    group = SYNC_GROUP if sync else GROUP
    flush = "sync flush" if sync else "async flush"
    print(f"[broker over loopback: ours vs the RocketMQ 4.9.3 broker, {flush}]", flush=True)
    t_start = time.perf_counter()
    ours = BrokerProcess(os.path.join(directory, "ours"), small=js.small_store, flush_type=flush_type)
    java = JavaBroker(build, os.path.join(directory, "java"), flush_type=flush_type, small=js.small_store)
    drivers: dict[str, JavaSendDriver] = {}
    try:
        ours.start()
        java.start()
        addrs = {"ours": ours.namesrv_addr, "java": java.namesrv_addr}
        for side, addr in addrs.items():
            drivers[side] = JavaSendDriver(build, classes, os.path.join(directory, f"driver-{side}"), addr,
                                           "our broker" if side == "ours" else "the 4.9.3 broker")
        # warm both brokers up (the JVM's JIT above all) before the first round
        workloads: list[tuple[str, Callable[[], Row | None]]] = [("warm-up", lambda: _warm_up(drivers, js))]
        if cpp:
            workloads.append(("C++ client send_sync 100 B", lambda: _cpp_row(directory, addrs, js, group,
                                                                              flush_type)))
        for threads, body_bytes in JAVA_LOADS:
            n = (js.sync_send_n if threads == 1 else js.sync_threads_n) if sync else (
                js.send_n if threads == 1 else js.threads_n)
            workloads.append((f"Java send {size_label(body_bytes)}, {threads} thread(s)",
                              functools.partial(_java_send_row, drivers, js, group, flush_type, threads,
                                                body_bytes, n)))
        if not sync and js.drain_n:
            workloads.append(("Java push consumer drain", lambda: _drain_row(drivers, js, group, flush_type)))
        for what, row in workloads:
            # one workload failing (a loaded machine timing a client out) leaves the others' rows
            try:
                r = row()
                if r is not None:
                    add(r)
            except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
                notes.skip(f"RocketMQ 4.9.3 broker rows (same run), {flush_type}, {what}: {exc}")
    finally:
        for d in drivers.values():
            d.close()
        java.stop()
        ours.stop()
    print(f"  ({time.perf_counter() - t_start:.1f} s)", flush=True)


def _warm_up(drivers: dict[str, JavaSendDriver], js: JavaSizes) -> None:
    for d in drivers.values():
        d.send_rate("BenchJavaWarmUp", js.threads_n, 100, 8)


def _cpp_row(directory: str, addrs: dict[str, str], js: JavaSizes, group: str, flush_type: str) -> Row:
    sides: dict[str, Callable[[], Any]] = {
        side: (lambda a=addr, s=side: cpp_send_rate(os.path.join(directory, f"driver-{s}"), a,
                                                    "BenchJavaCpp100", js.cpp_n, 100))
        for side, addr in addrs.items()}
    m = {k: median(v) for k, v in alternate(js.rounds, sides).items()}
    return Row(group, "send 100 B, official C++ client send_sync loop, 1 thread: our broker vs the RocketMQ "
               "4.9.3 broker", "msgs/s", m["ours"], f"{REFERENCE}, {flush_type}, the same C++ client loop", m["java"])


def _java_send_row(drivers: dict[str, JavaSendDriver], js: JavaSizes, group: str, flush_type: str, threads: int,
                   body_bytes: int, n: int) -> Row:
    topic = f"BenchJava{threads}t{body_bytes}"
    for d in drivers.values():  # warm-up, a round long: route, topic creation, the JIT
        d.send_rate(topic, n, body_bytes, threads)
    sides = {side: functools.partial(d.send_rate, topic, n, body_bytes, threads) for side, d in drivers.items()}
    m = {k: median(v) for k, v in alternate(js.rounds, sides).items()}
    thread_s = "1 thread" if threads == 1 else f"{threads} threads"
    sync = "sync " if flush_type == "SYNC_FLUSH" else ""
    return Row(group, f"{sync}send {size_label(body_bytes)}, Java client (4.9.3 DefaultMQProducer) sync send "
               f"loop, {thread_s}: our broker vs the RocketMQ 4.9.3 broker", "msgs/s", m["ours"],
               f"{REFERENCE}, {flush_type}, the same Java driver", m["java"])


def _drain_row(drivers: dict[str, JavaSendDriver], js: JavaSizes, group: str, flush_type: str) -> Row:
    """Pre-fill one topic per broker (untimed, through each side's driver), then per round a new push
    consumer group takes all of it from the first offset."""
    topic = "BenchJavaDrain100"
    for d in drivers.values():
        d.send_rate(topic, js.drain_n, 100, 8)
    rounds = {side: 0 for side in drivers}

    def drain(side: str) -> float:
        rounds[side] += 1
        return drivers[side].drain_rate(topic, js.drain_n, f"bench-drain-{rounds[side]}")

    sides = {side: (lambda s=side: drain(s)) for side in drivers}
    m = {k: median(v) for k, v in alternate(js.rounds, sides).items()}
    return Row(group, f"consume 100 B, Java push consumer (4.9.3 DefaultMQPushConsumer) drains {js.drain_n:,} "
               "pre-filled messages from the first offset: our broker vs the RocketMQ 4.9.3 broker", "msgs/s",
               m["ours"], f"{REFERENCE}, {flush_type}, the same Java push consumer", m["java"])
