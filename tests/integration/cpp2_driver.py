"""Drive cpp2_tx_runner.py (the official RocketMQ C++ client 2.x, core "2.1.0_cvs", through its C API) from tests.

``cpp2_lib`` (session fixture) downloads the sdist of PyPI ``rocketmq-python-cvs`` 2.1.0.3 with pip into the
session's temp directory and extracts only its ``rocketmq/librocketmq.so``; the package itself is never
installed (its top-level module ``rocketmq`` is the one of PyPI ``rocketmq`` 0.4.4, which the 1.x tests import).
The tests are skipped, saying why, when pip or the registry fails, the archive is not the expected one or the
library does not load here.  Each producer runs in its own process (the library's threads may hang on
shutdown), its JSON lines collected by a reader thread:

    runner = cpp2_lib.runner(["tx-produce", namesrv, topic, group, "4", "--local", "commit"], tmp_path)
    runner.collect_until(lambda seen: any(s.get("sent") for s in seen), 60, "four transactional sends")
    runner.stop()
"""

from __future__ import annotations

import hashlib
import os
import queue
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from json_lines_child import JsonLinesChild

RUNNER = Path(__file__).resolve().parent / "cpp2_tx_runner.py"
PACKAGE, VERSION = "rocketmq-python-cvs", "2.1.0.3"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
#: sha256 of the sdist as PyPI serves it (the archive pip downloads is checked before anything is extracted)
SDIST_SHA256 = "99e4ce8008554a74193a3ad94b60f939a4666c48ffabbf4c4417a109daf1419d"
MEMBER = f"{PACKAGE}-{VERSION}/rocketmq/librocketmq.so"
CORE_VERSION = "CPP CORE VERSION: 2.1.0_cvs"


class Runner(JsonLinesChild):
    """One cpp2_tx_runner.py process, its JSON lines collected by a reader thread."""

    def __init__(self, lib: Path, args: list[str], home: Path, env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["RMQ_CPP2_LIB"] = str(lib)
        full_env["HOME"] = str(home)
        self.log_dir = home / "logs" / "rocketmq-cpp"  # the library's own log, worth reading when a test fails
        full_env["ROCKETMQ_CLIENT_LOG_DIR"] = str(self.log_dir)
        self._stderr: str | None = None
        super().__init__(RUNNER, args, full_env)

    def _take(self, item: dict[str, Any]) -> None:
        self.seen.append(item)
        for key in ("error", "callback_error"):
            if key in item:
                raise AssertionError(f"C++ 2.x runner failed: {item[key]}; stderr: {self.stderr_tail()}")

    def collect_until(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout_s: float,
                      what: str) -> list[dict[str, Any]]:
        """Gather lines until ``predicate(self.seen)`` holds; AssertionError (with the last lines) after
        *timeout_s*."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self.seen):
            try:
                item = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; last lines: "
                                     f"{self.seen[-5:]}; stderr: {self.stderr_tail()}; the client's log is in "
                                     f"{self.log_dir}") from None
            self._take(item)
        return self.seen

    def drain(self) -> list[dict[str, Any]]:
        while True:
            try:
                self._take(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def stop(self, timeout_s: float = 20.0) -> None:
        """Ask the producer to shut down (it answers {"shutdown": true}); kill it if it does not exit in time."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        errors = [s.get("error") or s.get("callback_error") for s in self.seen if "error" in s or "callback_error" in s]
        if errors:
            raise AssertionError(f"C++ 2.x runner failed: {errors[0]}; stderr: {self.stderr_tail()}")

    def stderr_tail(self) -> str:
        if self._stderr is None and self.proc.poll() is not None and self.proc.stderr is not None:
            self._stderr = self.proc.stderr.read()
        return (self._stderr or "")[-500:]

    def kill(self) -> None:
        """Kill the process if it still runs, collect its last lines and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)
        self.stderr_tail()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:  # stdin: the child is gone, the flush of a pending "stop" fails
                pass
        while not self.lines.empty():  # no checking here: stop() and collect_until report error lines
            self.seen.append(self.lines.get_nowait())


class Cpp2Lib:
    """The extracted librocketmq.so (2.1.0_cvs) and a way to run cpp2_tx_runner.py against it."""

    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.version = version

    def runner(self, args: list[str], home: Path, env: dict[str, str] | None = None) -> Runner:
        return Runner(self.path, args, home, env)


def sends(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The send lines of a tx-produce run."""
    return [s for s in seen if "status" in s]


def checks(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The check-callback lines of a tx-produce run."""
    return [s for s in seen if s.get("check")]


def _fetch(directory: Path) -> Path:
    """pip download the sdist into *directory*, check it, extract the library; pytest.skip on any failure."""
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "--disable-pip-version-check", f"{PACKAGE}=={VERSION}", "-d", str(directory)],
                              capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip download of {PACKAGE}=={VERSION} timed out (no registry?)")
    archive = directory / SDIST
    if done.returncode != 0 or not archive.is_file():
        pytest.skip(f"pip download of {PACKAGE}=={VERSION} failed (no registry?): "
                    f"{(done.stderr or done.stdout)[-500:]}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        pytest.skip(f"{SDIST} has sha256 {digest}, not the expected {SDIST_SHA256}")
    target = directory / "librocketmq.so"
    try:
        with tarfile.open(archive) as tar:
            member = tar.extractfile(MEMBER)
            if member is None:
                pytest.skip(f"{MEMBER} is not a regular file in {SDIST}")
            target.write_bytes(member.read())
    except (tarfile.TarError, KeyError, OSError) as exc:
        pytest.skip(f"cannot extract {MEMBER} from {SDIST}: {exc}")
    if CORE_VERSION.encode() not in target.read_bytes():
        pytest.skip(f"{MEMBER} does not say {CORE_VERSION!r}")
    return target


@pytest.fixture(scope="session")
def cpp2_lib(tmp_path_factory: pytest.TempPathFactory) -> Cpp2Lib:
    directory = tmp_path_factory.mktemp("cpp2")
    path = _fetch(directory)
    probe = Runner(path, ["probe"], directory)
    try:
        probe.collect_until(lambda seen: any(s.get("ok") for s in seen), 30, "the library to load")
    except AssertionError as exc:
        pytest.skip(f"librocketmq.so {VERSION} (C++ client 2.1.0_cvs) does not load here: {exc}")
    finally:
        probe.kill()
    return Cpp2Lib(path, next(s["version"] for s in probe.seen if s.get("ok")))
