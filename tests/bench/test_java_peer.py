"""bench/java_peer.py: the rows against RocketMQ 4.9.3's own broker, measured in the same run.

Without Java (CI has none) only the pieces that need no JVM run: the skip note and the broker.conf the bench
writes.  With $ROCKETSTORE_JAVA_PEERS naming a scripts/java-peers/build.sh build, a tiny run starts both
brokers and checks the rows are well-formed.  No performance assertions.
"""

from __future__ import annotations

import math
import os
import socket
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # bench/ sits at the repository root, beside src/
    sys.path.insert(0, str(REPO_ROOT))

from bench import java_peer
from bench.common import Notes, Row
from bench.java_peer import ENV, GROUP, SYNC_GROUP, broker_conf, broker_port, find_build, java_peer_workloads


def test_without_the_variable_the_rows_are_skipped_with_a_note_saying_how_to_get_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV, raising=False)
    notes = Notes()
    rows: list[Row] = []
    java_peer_workloads("smoke", str(tmp_path), notes, rows.append)
    assert rows == []
    assert len(notes.skipped) == 1
    assert ENV in notes.skipped[0] and "scripts/java-peers/build.sh" in notes.skipped[0]
    assert not (tmp_path / "broker-java").exists()


def test_a_directory_that_is_not_a_build_is_named_in_the_note(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    build, why = find_build({ENV: str(tmp_path)})
    assert build is None
    assert str(tmp_path) in why and "classes" in why and "classpath.txt" in why


def test_a_build_directory_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("run.sh", "classpath.txt"):
        (tmp_path / name).write_text("/x.jar\n")
    (tmp_path / "classes").mkdir()
    monkeypatch.setattr(java_peer.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    build, why = find_build({ENV: str(tmp_path)})
    assert why == "" and build is not None
    assert build.run_sh == str(tmp_path / "run.sh")
    assert build.classpath() == f"{tmp_path / 'classes'}:/x.jar"


@pytest.mark.parametrize("flush_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_broker_conf_keeps_rocketmq_defaults_but_flush_ports_store_and_segment(flush_type: str) -> None:
    conf = broker_conf("/w/java", 30911, flush_type, small=False)
    assert conf["flushDiskType"] == flush_type
    assert conf["listenPort"] == 30911 and conf["haListenPort"] == 30912
    assert conf["brokerId"] == 0 and conf["brokerIP1"] == "127.0.0.1"
    assert conf["autoCreateTopicEnable"] == "true"
    assert conf["storePathRootDir"] == os.path.join("/w/java", "store")
    assert conf["storePathCommitLog"] == os.path.join("/w/java", "store", "commitlog")
    # 4.9.3 reads the setter's name (MessageStoreConfig.setMappedFileSizeCommitLog), the same as our bench's
    assert conf["mappedFileSizeCommitLog"] == 256 << 20
    assert broker_conf("/w/java", 30911, flush_type, small=True)["mappedFileSizeCommitLog"] == 8 << 20
    assert set(conf) == {"brokerClusterName", "brokerName", "brokerId", "brokerIP1", "listenPort", "haListenPort",
                         "storePathRootDir", "storePathCommitLog", "autoCreateTopicEnable", "flushDiskType",
                         "mappedFileSizeCommitLog"}


def test_broker_port_leaves_the_vip_and_ha_ports_free() -> None:
    port = broker_port()
    for p in (port, port - 2, port + 1):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", p))


def test_the_driver_source_is_in_the_repository() -> None:
    assert java_peer.DRIVER_SOURCE.is_file()
    assert f"public class {java_peer.DRIVER_CLASS} " in java_peer.DRIVER_SOURCE.read_text(encoding="utf-8")


@pytest.mark.skipif(not os.environ.get(ENV), reason=f"{ENV} names no RocketMQ 4.9.3 build (docs/java-peers.md)")
def test_tiny_run_against_both_brokers(tmp_path: Path) -> None:
    notes = Notes()
    rows: list[Row] = []
    java_peer_workloads("smoke", str(tmp_path), notes, rows.append)
    assert notes.skipped == [], notes.skipped
    assert {r.group for r in rows} == {GROUP, SYNC_GROUP}
    assert len(rows) == 2 * len(java_peer.JAVA_LOADS) + 1  # + the push consumer's drain (async flush)
    assert sum(r.name.startswith("consume 100 B, Java push consumer") for r in rows) == 1
    for r in rows:
        assert r.target_ratio is None
        assert math.isfinite(r.ours) and r.ours > 0
        assert math.isfinite(r.reference_value) and r.reference_value > 0
        assert r.reference.startswith(java_peer.REFERENCE)
    assert not (tmp_path / "broker-java").exists()
