"""``rocketstore serve`` as a user runs it: the real CLI (``python -m rocketstore.cli.main serve``) in a
subprocess, its one "listening on" line read with a deadline, SIGTERM or SIGKILL to stop it, and
``rocketstore store dump`` run on the store afterwards.

    conf = write_broker_conf(tmp_path / "broker.conf", flush_disk_type="SYNC_FLUSH")
    with ServeProcess(tmp_path / "store", conf) as serve:      # ports 0: the OS picks them
        serve.namesrv_addr, serve.broker_addr
    dump = store_dump(tmp_path / "store", conf)

Small segments and a small index keep the store tiny (a default store maps a 1 GiB commitlog and a 420 MB
index file).
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Self

SRC = Path(__file__).resolve().parents[2] / "src"
ADDR = re.compile(r"listening on (127\.0\.0\.1:\d+)")

SMALL_STORE_CONF = {
    "mappedFileSizeCommitLog": 4 << 20,
    "mappedFileSizeConsumeQueue": 20_000 * 20,
    "maxHashSlotNum": 1000,
    "maxIndexNum": 4000,
    "preallocateCommitLog": "false",
    # persist committed consumer offsets often, so a crash loses little
    "flushConsumerOffsetInterval": 500,
}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def free_port() -> int:
    """A port free right now (bound and released), for a server that must come back on the same port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_broker_conf(path: Path, **extra: object) -> Path:
    """A broker.conf with SMALL_STORE_CONF and *extra* (``flush_disk_type=...`` or ``flushDiskType=...``)."""
    props: dict[str, object] = dict(SMALL_STORE_CONF)
    for key, value in extra.items():
        name = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        props[name] = value
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return path


class ServeProcess:
    """One ``rocketstore serve`` subprocess; the first line it prints gives both addresses."""

    def __init__(self, store: Path, conf: Path | None = None, *, namesrv_port: int = 0, broker_port: int = 0,
                 start_timeout_s: float = 60.0, extra_args: tuple[str, ...] = ()) -> None:
        self.store = store
        self.extra_args = extra_args
        self.conf = conf
        self.namesrv_port = namesrv_port
        self.broker_port = broker_port
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.namesrv_addr = ""
        self.broker_addr = ""
        self.first_line = ""  # what serve printed on start (its addresses; the metrics URL with --metrics-port)

    def start(self) -> Self:
        args = [sys.executable, "-m", "rocketstore.cli.main", "serve", "--store", str(self.store),
                "--namesrv-port", str(self.namesrv_port), "--broker-port", str(self.broker_port)]
        if self.conf is not None:
            args += ["-c", str(self.conf)]
        args += self.extra_args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        try:
            line = self.lines.get(timeout=self.start_timeout_s)
        except queue.Empty:
            line = None
        found = ADDR.findall(line or "")
        if len(found) != 2:
            self.kill()
            raise AssertionError(f"serve did not say where it listens within {self.start_timeout_s} s: {line!r}; "
                                 f"stderr: {self.stderr_tail()}")
        self.namesrv_addr, self.broker_addr = found
        self.first_line = line or ""
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.terminate()

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait for the clean shutdown (SIGKILL if it does not come in time)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        finally:
            self.kill()

    def kill(self) -> None:
        """SIGKILL (kill -9): no shutdown code runs, the store is left as a crash leaves it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stderr_tail(self) -> str:
        if self.proc is None or self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read()[-2000:]


def cli(*args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketstore.cli.main", *args], capture_output=True, text=True,
                          env=env(), timeout=timeout_s, check=False)


def store_dump(store: Path, conf: Path | None = None) -> dict[str, Any]:
    """``rocketstore store dump DIR [-c broker.conf]`` parsed."""
    args = ["store", "dump", str(store)] + (["-c", str(conf)] if conf is not None else [])
    out = cli(*args)
    assert out.returncode == 0, f"store dump failed ({out.returncode}): {out.stderr[-2000:]}"
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def wait_for(fn: Any, timeout_s: float, what: str, interval_s: float = 0.05) -> Any:
    """Poll *fn* until it returns something truthy; AssertionError after *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {value!r})")
        time.sleep(interval_s)
