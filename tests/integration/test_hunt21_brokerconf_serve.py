"""``rocketstore serve -c broker.conf`` with a broker.conf written as Java properties (a continued line, a
\\uXXXX escape), seen through GET_BROKER_CONFIG; ``broker-admin config set`` of a value with a backslash
arrives, is shown and is written back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.message.java_properties import read_properties_file


def config_of(namesrv_addr: str, broker_addr: str) -> dict[str, str]:
    out = cli("broker-admin", "config", "get", "-n", namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[broker_addr]  # type: ignore[no-any-return]


def test_java_properties_syntax_and_a_backslash_through_config_set(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    with conf.open("a", encoding="utf-8") as fh:
        fh.write("brokerClusterName=Hunt\\\n    21Cluster\nmsgTraceTopicName=Trace\\u005FTopic\n")
    with ServeProcess(tmp_path / "store", conf) as serve:
        shown = config_of(serve.namesrv_addr, serve.broker_addr)
        assert shown["brokerClusterName"] == "Hunt21Cluster"
        assert shown["msgTraceTopicName"] == "Trace_Topic"
        out = cli("broker-admin", "config", "set", "msgTraceTopicName=C:\\trace\\topic", "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
        assert config_of(serve.namesrv_addr, serve.broker_addr)["msgTraceTopicName"] == "C:\\trace\\topic"
        written = read_properties_file(str(conf))
        assert written["msgTraceTopicName"] == "C:\\trace\\topic"
        assert written["brokerClusterName"] == "Hunt21Cluster"
