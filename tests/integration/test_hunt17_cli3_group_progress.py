"""``rocketstore group progress`` without a group, as mqadmin consumerProgress without -g: one line per group
that has a retry topic, with its connected clients (OFFLINE when none), type, model, TPS and total diff."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster
from serve_process import cli, wait_for
from test_admin_cli import ok, ok_json


def test_group_progress_without_a_group_lists_every_group(tmp_path: Path) -> None:
    from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer

    handled: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        handled.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        ok_json("topic", "create", "ProgressAll", "-r", "2", "-w", "2", "-b", cluster.broker_addr, *ns)
        ok_json("send", "ProgressAll", "p {i}", "--count", "4", *ns)
        consumer = PushConsumer(cluster.namesrv_addr, "cli3-all-group", {"ProgressAll": "*"}, handle,
                                heartbeat_interval_s=0.5, rebalance_interval_s=0.5, persist_interval_s=0.2,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run(consumer.start())
        try:
            cluster.wait_until(lambda: len(handled) == 4, 20, "the 4 messages consumed")
            wait_for(lambda: ok_json("group", "progress", "cli3-all-group", *ns)["diffTotal"] == 0,
                     20, "the offsets committed")
            [row] = [g for g in ok_json("group", "progress", *ns) if g["group"] == "cli3-all-group"]
            assert row["count"] == 1 and row["type"] == "PUSH" and row["model"] == "CLUSTERING"
            assert row["version"] != "OFFLINE" and row["diffTotal"] == 0
            text = ok("group", "progress", *ns)
            assert text.splitlines()[0].split()[:3] == ["GROUP", "COUNT", "VERSION"]
            assert any(line.split()[:2] == ["cli3-all-group", "1"] for line in text.splitlines())
        finally:
            cluster.run(consumer.shutdown())
        ok_json("send", "ProgressAll", "late {i}", "--count", "3", *ns)
        cluster.wait_dispatched()
        [row] = [g for g in ok_json("group", "progress", *ns) if g["group"] == "cli3-all-group"]
        assert row == {"group": "cli3-all-group", "count": 0, "version": "OFFLINE", "type": "", "model": "",
                       "consumeTps": row["consumeTps"], "diffTotal": 3}
        out = cli("group", "progress", "-t", "ProgressAll", *ns)
        assert out.returncode == 1 and out.stderr.strip() == "rocketstore: error: -t/--topic needs a group"
