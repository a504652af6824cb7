"""``consume`` and ``message print-queue`` print one line per message: a body with a carriage return does not
split it (a reader in text mode splits lines at ``\\r`` too) nor overwrite it on a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import ok
from local_cluster import LocalCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_a_carriage_return_in_a_body_keeps_one_line_per_message(capsys: pytest.CaptureFixture[str],
                                                                cluster: LocalCluster) -> None:
    cluster.create_topic("CrBodies")
    ok(capsys, cluster, "send", "CrBodies", "head\rtail {i}", "--count", "2", "--queue", "0")
    cluster.wait_dispatched()

    consumed = ok(capsys, cluster, "consume", "CrBodies", "-g", "cr-group", "--from", "first", "--max", "2")
    lines = consumed.splitlines()
    assert "\r" not in consumed
    assert [line.rsplit("  ", 1)[-1] for line in lines[:2]] == ["head\\rtail 0", "head\\rtail 1"]

    listed = ok(capsys, cluster, "message", "print-queue", "-t", "CrBodies", "-b", "broker-a", "-i", "0",
                "--begin-offset", "0")
    assert "\r" not in listed
    assert [line.endswith(f"head tail {i}") for i, line in enumerate(listed.splitlines()[1:3])] == [True, True]
