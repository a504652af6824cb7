"""Drive ons_runner.js (the Node RocketMQ client ali-ons, npm ``ali-ons`` 3.12.0) from tests.

``ons_client`` (session fixture) installs the pinned packages with npm into the session's temp directory
and returns the runner; the tests are skipped, saying why, when node or npm is missing or the install
fails (no registry).  Each command runs in its own ``node`` process and answers in JSON lines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

RUNNER = Path(__file__).resolve().parent / "ons_runner.js"
#: the Node client and the HTTP client it is constructed with (it only uses it without a name server address)
PACKAGES = ("ali-ons@3.12.0", "urllib@2.44.1")


class OnsClient:
    def __init__(self, modules: Path, node: str) -> None:
        self.modules = modules
        self.node = node

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        env = dict(os.environ)
        env["NODE_PATH"] = str(self.modules)
        env.update(extra or {})
        return env

    def start(self, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([self.node, "--max-old-space-size=512", str(RUNNER), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self._env(env))

    def run(self, args: list[str], env: dict[str, str] | None = None, timeout_s: float = 90.0) -> list[dict[str, Any]]:
        return self.finish(self.start(args, env), timeout_s)

    @staticmethod
    def finish(proc: subprocess.Popen[str], timeout_s: float = 90.0) -> list[dict[str, Any]]:
        """The JSON lines of a runner process once it exits (killed after *timeout_s*)."""
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"ali-ons runner did not finish in {timeout_s} s: {out[-1000:]} {err[-1000:]}")
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if not lines:
            raise AssertionError(f"ali-ons runner printed nothing (exit {proc.returncode}): {err[-2000:]}")
        return lines


@pytest.fixture(scope="session")
def ons_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OnsClient]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the ali-ons client tests (apt-get install -y nodejs npm)")
    prefix = tmp_path_factory.mktemp("ali-ons")
    try:
        done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                               *PACKAGES], capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of ali-ons timed out (no registry?)")
    if done.returncode != 0:
        pytest.skip(f"npm install of ali-ons failed (no registry?): {done.stderr[-500:]}")
    yield OnsClient(prefix / "node_modules", node)
