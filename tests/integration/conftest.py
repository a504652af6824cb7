"""Integration tests: name server + broker on 127.0.0.1 with real clients.  Helpers live next to the tests
(local_cluster.py, cpp_client_runner.py); with --import-mode=importlib this directory must be importable."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cpp2_driver import cpp2_lib  # noqa: F401 - the session fixture of the C++ 2.x client transaction tests
from ons_driver import ons_client  # noqa: F401 - the session fixture of the ali-ons (Node client) tests
