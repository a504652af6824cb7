"""The CLI run in process against a LocalCluster's name server, as the admin command tests call it:
``main([...args, "-n", namesrv])`` with what it printed read from capsys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.cli.main import main


def rocketstore(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``rocketstore ARGS -n NAMESRV``."""
    status = main([*args, "-n", cluster.namesrv_addr])
    out = capsys.readouterr()
    return status, out.out, out.err


def ok(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, *args: str) -> str:
    """stdout of a command that must succeed."""
    status, out, err = rocketstore(capsys, cluster, *args)
    assert status == 0, err
    return out


def ok_json(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, *args: str) -> Any:
    """The ``--json`` answer of a command that must succeed."""
    return json.loads(ok(capsys, cluster, *args, "--json"))


def refused(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, *args: str) -> str:
    """The one error line of a command that must fail with exit status 1 and print nothing on stdout."""
    status, out, err = rocketstore(capsys, cluster, *args)
    assert status == 1, (out, err)
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("rocketstore: error: "), err
    return err
