"""Drive cpp_client_runner.py (the official RocketMQ C++ client, PyPI ``rocketmq`` 0.4.4) from tests: one
subprocess per producer or consumer run, its JSON lines collected by a reader thread.

    runner = Runner(["consume", namesrv, topic, group, "TagA || TagB"], home)
    runner.collect_until(lambda seen: len(messages(seen)) >= 10, 30, "ten messages")
    runner.stop()

The module probes once whether the wheel imports on this platform; ``requires_cpp_client`` skips otherwise.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from json_lines_child import JsonLinesChild

RUNNER = Path(__file__).resolve().parent / "cpp_client_runner.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    env["HOME"] = str(home)  # the C++ client writes $HOME/logs/rocketmq-cpp
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _probe() -> str | None:
    try:
        out = subprocess.run([sys.executable, str(RUNNER), "probe"], capture_output=True, text=True, timeout=30,
                             check=False)
    except subprocess.TimeoutExpired:
        return "importing the rocketmq C++ client timed out"
    if '"ok": true' in out.stdout:
        return None
    return f"the rocketmq C++ client (PyPI rocketmq 0.4.4) cannot be imported here: {out.stdout.strip()} " \
           f"{out.stderr.strip()[-300:]}"


SKIP_REASON = _probe()
#: ``pytestmark = requires_cpp_client`` in a test module: skipped only when the wheel cannot be imported here
requires_cpp_client = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


class Runner(JsonLinesChild):
    """One cpp_client_runner.py process, its JSON lines collected by a reader thread."""

    def __init__(self, args: list[str], home: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(RUNNER, args, _env(home, env))

    def next(self, deadline: float) -> dict[str, Any] | None:
        try:
            item = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        self.seen.append(item)
        if "error" in item:
            raise AssertionError(f"C++ client runner failed: {item['error']}")
        return item

    def collect_until(self, predicate: Any, timeout_s: float, what: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while not predicate(self.seen):
            if self.next(deadline) is None:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; got {self.seen[-5:]}; "
                                     f"stderr: {self.stderr_tail()}")
        return self.seen

    def drain(self) -> None:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return

    def stop(self, timeout_s: float = 15.0) -> None:
        """Ask a consumer to shut down; kill it if it does not exit in time."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):  # (ValueError: stdin closed by an earlier stop)
            pass
        self.wait(timeout_s)

    def wait(self, timeout_s: float) -> None:
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)
        self.drain()

    def stderr_tail(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read()[-500:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def messages(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The delivery lines of a consumer run."""
    return [s for s in seen if "body" in s]


def consume_messages(args: list[str], home: Path, count: int, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Run the ``consume`` runner with *args* until it has been pushed *count* messages, stop it, and return its
    delivery lines (all of them: more than *count* if more came)."""
    consumer = Runner(args, home)
    try:
        consumer.collect_until(lambda seen: len(messages(seen)) >= count, timeout_s, f"{count} pushed messages")
        consumer.stop()
    finally:
        consumer.kill()
    return messages(consumer.seen)


def collect_all_until(runners: list[Runner], predicate: Any, timeout_s: float, what: str) -> None:
    """Gather the lines of several runners until ``predicate([runner.seen, ...])`` holds."""
    deadline = time.monotonic() + timeout_s
    while True:
        for runner in runners:
            runner.drain()
            errors = [s["error"] for s in runner.seen if "error" in s]
            if errors:
                raise AssertionError(f"C++ client runner failed: {errors[0]}")
        if predicate([runner.seen for runner in runners]):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; got "
                                 f"{[r.seen[-3:] for r in runners]}")
        time.sleep(0.05)
