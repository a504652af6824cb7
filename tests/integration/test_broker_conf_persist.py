"""UPDATE_BROKER_CONFIG writes the broker.conf the broker was started with, as 4.9.3's broker does with ``-c``:
``rocketstore serve -c broker.conf`` in a subprocess, ``rocketstore broker-admin config set`` from another,
the file read afterwards, and a restart from the same file that comes up with the new value."""

from __future__ import annotations

import json
from pathlib import Path

from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.message.java_properties import read_properties_file


def config_of(namesrv_addr: str, broker_addr: str) -> dict[str, str]:
    out = cli("broker-admin", "config", "get", "-n", namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[broker_addr]  # type: ignore[no-any-return]


def test_config_set_rewrites_the_start_file_keeping_the_old_text_and_a_restart_reads_it(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", short_polling_time_mills=1000)
    original = conf.read_text(encoding="utf-8")
    with ServeProcess(tmp_path / "store", conf) as serve:
        assert config_of(serve.namesrv_addr, serve.broker_addr)["shortPollingTimeMills"] == "1000"
        out = cli("broker-admin", "config", "set", "shortPollingTimeMills=1700", "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
        written = read_properties_file(str(conf))
        assert written["shortPollingTimeMills"] == "1700"
        # every property, as 4.9.3's Configuration.persist writes them, and the hand-written ones kept
        assert written["mappedFileSizeCommitLog"] == str(4 << 20) and "brokerName" in written
        assert Path(f"{conf}.bak").read_text(encoding="utf-8") == original
        assert not (tmp_path / "store" / "config" / "broker.properties").exists()
    with ServeProcess(tmp_path / "store", conf) as serve:
        assert config_of(serve.namesrv_addr, serve.broker_addr)["shortPollingTimeMills"] == "1700"


def test_without_a_start_file_the_store_keeps_the_properties(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "store") as serve:
        out = cli("broker-admin", "config", "set", "shortPollingTimeMills=1300", "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
    written = read_properties_file(str(tmp_path / "store" / "config" / "broker.properties"))
    assert written["shortPollingTimeMills"] == "1300"
