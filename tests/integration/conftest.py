"""Integration tests: name server + broker on 127.0.0.1 with real clients.  Helpers live next to the tests
(local_cluster.py, cpp_client_runner.py); with --import-mode=importlib this directory must be importable."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cpp2_driver import cpp2_lib  # noqa: F401 - the session fixture of the C++ 2.x client transaction tests
from local_cluster import LocalCluster
from ons_driver import ons_client  # noqa: F401 - the session fixture of the ali-ons (Node client) tests
from raw_frames import RawConnection


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """A name server and a broker on 127.0.0.1 with its store in tmp_path/store, for one test (a module that
    needs another set-up defines a ``cluster`` fixture of its own)."""
    with LocalCluster(tmp_path / "store") as c:
        yield c


@pytest.fixture
def conn(cluster: LocalCluster) -> Iterator[RawConnection]:
    """A raw remoting connection (raw_frames.RawConnection) to the ``cluster`` fixture's broker, closed after
    the test."""
    c = RawConnection(cluster.broker_addr)
    try:
        yield c
    finally:
        c.close()
