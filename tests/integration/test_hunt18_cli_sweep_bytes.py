"""Arguments an operator's shell can hand the CLI that are not UTF-8 (Python decodes such argv bytes to lone
surrogates): a ``send`` / ``request`` body is sent as the very bytes given, and a broker or name-server
setting that cannot travel as UTF-8 text is one refusal line, never a UnicodeEncodeError traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_calls import ok, rocketstore
from local_cluster import LocalCluster

NOT_UTF8 = b"\xff\xfe body".decode("utf-8", "surrogateescape")  # what sys.argv holds for those bytes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("hunt18-cli-bytes") / "store") as c:
        yield c


def test_a_body_that_is_not_utf8_is_sent_as_the_bytes_given(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.create_topic("RawBody")
    sent = json.loads(ok(capsys, cluster, "send", "RawBody", NOT_UTF8, "--json"))
    stored = cluster.call(lambda: cluster.broker.store.message_by_id(sent[0]["offsetMsgId"]))
    assert stored is not None and stored.body == b"\xff\xfe body"


def test_a_setting_that_is_not_utf8_is_refused_in_one_line(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = rocketstore(capsys, cluster, "namesrv-config", "set", f"productEnvName={NOT_UTF8}")
    assert status == 1 and out == "" and len(err.splitlines()) == 1 and "UTF-8" in err, err
    with pytest.raises(SystemExit) as usage:  # an argparse type: a usage error
        rocketstore(capsys, cluster, "broker-admin", "config", "set", f"brokerPermission={NOT_UTF8}")
    assert usage.value.code == 2 and "not UTF-8 text" in capsys.readouterr().err
