"""The test side of a runner script (cpp_driver.py's and cpp2_driver.py's Runner): the child process, its
stdin for commands, and a reader thread that queues each JSON line it writes on stdout."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["JsonLinesChild"]


class JsonLinesChild:
    def __init__(self, script: Path, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, str(script), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        #: lines read and not yet taken; ``seen`` holds the taken ones, in order
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                self.lines.put(json.loads(line))
