"""``rocketstore kv put|delete`` say what they did, as every other changing command does (and as mqadmin's
updateKvConfig / deleteKvConfig print their "success" line), and ``--json`` gives a JSON answer, not an
empty output."""

from __future__ import annotations

from typing import Any

import pytest
from cli_calls import ok, ok_json
from local_cluster import LocalCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("hunt14-cli-kv") / "store") as c:
        yield c


def test_kv_put_and_delete_print_what_they_changed(cluster: LocalCluster,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    addr = cluster.namesrv_addr
    assert ok(capsys, cluster, "kv", "put", "NS1", "k1", "v1") == f"put NS1 k1=v1 on {addr}\n"
    assert ok_json(capsys, cluster, "kv", "put", "NS1", "k2", "v2") == {
        "namespace": "NS1", "key": "k2", "value": "v2", "namesrvs": [addr]}
    assert ok(capsys, cluster, "kv", "get", "NS1", "k2") == "v2\n"
    assert ok(capsys, cluster, "kv", "delete", "NS1", "k1") == f"deleted NS1 k1 on {addr}\n"
    assert ok_json(capsys, cluster, "kv", "delete", "NS1", "k2") == {"namespace": "NS1", "key": "k2",
                                                                    "namesrvs": [addr]}
