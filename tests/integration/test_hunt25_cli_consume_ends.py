"""``rocketstore consume`` ends without waiting out the long polls still in flight.

Each queue's pull loop long-polls the broker (PULL_SUSPEND_MS).  When the run ends (--max reached, --timeout
idle, Ctrl-C) a loop waiting on such a pull has taken and committed nothing, so it is cancelled: before,
the command waited for every held pull to come back (about a second each Ctrl-C).  Here the long poll is made
an hour long, so only a cancelled poll lets the command return; the thread's join bound is a liveness check
(a run that waits out the poll never returns), not a measure of speed.
"""

from __future__ import annotations

import json
import threading

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

import rocketstore.cli.client_cmds as client_cmds
from rocketstore.cli.main import main

HOUR_MS = 3_600_000


def _consume_in_thread(cluster: LocalCluster, *args: str) -> tuple[threading.Thread, list[int]]:
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(main(["consume", *args, "-n", cluster.namesrv_addr])),
                              daemon=True)
    thread.start()
    return thread, status


def test_max_reached_ends_the_run_while_other_queues_long_poll(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.create_topic("EndsTopic", queues=4)
    ok_json(capsys, cluster, "send", "EndsTopic", "only {i}", "--queue", "2")
    cluster.wait_dispatched()
    monkeypatch.setattr(client_cmds, "PULL_SUSPEND_MS", HOUR_MS)
    thread, status = _consume_in_thread(cluster, "EndsTopic", "-g", "ends-group", "--max", "1", "--timeout", "inf",
                                        "--json")
    thread.join(120)  # liveness only: without the cancel the three empty queues hold the run for an hour
    assert not thread.is_alive(), "consume waited out the long polls of the empty queues"
    assert status == [0]
    answer = json.loads(capsys.readouterr().out)
    assert [m["body"] for m in answer["messages"]] == ["only 0"]
    assert answer["committed"] == [{"brokerName": "broker-a", "queueId": 2, "offset": 1}]
