"""Fixtures shared by the store's unit tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Let threads interleave often (a 1 µs switch interval), so that races show up within a short test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)
