"""``rocketstore consume --reply``: a request whose requester has gone (the broker answers the reply with
"channel ... not found") is one warning line, and the responder goes on to the next requests and commits
past it, instead of ending with an error on every restart at the same stale request."""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, rocketstore
from local_cluster import LocalCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("hunt14-cli-reply") / "store") as c:
        yield c


def test_a_request_of_a_requester_gone_is_a_warning_and_the_responder_goes_on(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, cluster, "topic", "create", "StaleRpc", "-b", cluster.broker_addr, "-r", "1", "-w", "1")
    cluster.wait_until(lambda: cluster.namesrv.routes.route("StaleRpc") is not None, 20, "the topic's route")
    for n in range(2):
        ok(capsys, cluster, "send", "StaleRpc", f"ping {n}", "--property", "REPLY_TO_CLIENT=10.9.9.9@gone",
           "--property", f"CORRELATION_ID=stale-{n}", "--property", "TTL=3000")
    status, out, err = rocketstore(capsys, cluster, "consume", "StaleRpc", "-g", "stale-server", "--reply",
                                   "pong: {body}", "--timeout", "1")
    assert status == 0, err
    assert "ping 0" in out and "ping 1" in out
    assert "consumed 2 message(s)" in out and "broker-a/0=2" in out
    warnings = err.splitlines()
    assert len(warnings) == 2 and all(w.startswith("rocketstore: warning: ") for w in warnings), err
    assert "not found" in warnings[0] and "Traceback" not in err
