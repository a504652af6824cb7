"""Fixtures shared by the store's unit tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator

import pytest

#: what every :func:`store_child` script starts with: the store's classes, the store directory ``root`` (the
#: child's argv[1]) and ``proc_status_bytes(field)``, a size from /proc/self/status (VmSize, RssFile, ...)
_STORE_CHILD_PRELUDE = textwrap.dedent("""
    import os, sys
    from rocketstore.message.record import Message
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.message_store import MessageStore

    root = sys.argv[1]

    def proc_status_bytes(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no " + field + " in /proc/self/status")
""")


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Let threads interleave often (a 1 µs switch interval), so that races show up within a short test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.fixture
def store_child() -> Callable[..., list[str]]:
    """``run(script, root, prelude="")``: run *script* in a fresh Python process with the store directory
    *root*, after the prelude above and the module's own *prelude* (each dedented), and give what it printed,
    split on white space.  For what the test process must not share: a lowered RLIMIT_NOFILE / RLIMIT_AS, or
    the memory a store maps in as it opens."""
    def run(script: str, root: str, prelude: str = "") -> list[str]:
        code = _STORE_CHILD_PRELUDE + textwrap.dedent(prelude) + textwrap.dedent(script)
        proc = subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    return run
