"""``rocketstore namesrv -c FILE``: the file is the configStorePath too, as in 4.9.3's NamesrvStartup, so a
setting changed at run time (UPDATE_NAMESRV_CONFIG, mqadmin updateNamesrvConfig) survives a restart with the
same file.  Found by running the same UPDATE_NAMESRV_CONFIG against 4.9.3's name server started with
``-c ns.properties``: it rewrote ns.properties (orderMessageEnable=true in it); ours wrote
~/namesrv/namesrv.properties, which is never read, and came back with orderMessageEnable=false."""

from __future__ import annotations

from pathlib import Path

from rocketstore.cli.serve_cmds import namesrv_config_of
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.namesrv import NameServer, NamesrvConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run


async def _ask(config: NamesrvConfig, code: int, body: bytes = b"") -> RemotingCommand:
    namesrv = NameServer(config)
    await namesrv.start("127.0.0.1", 0)
    pool = ConnectionPool()
    try:
        return await pool.request(namesrv.address, RemotingCommand.request(code, {}, body), 10)
    finally:
        await pool.close()
        await namesrv.close()


def test_a_setting_updated_at_run_time_is_kept_in_the_conf_file_across_a_restart(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    # a configStorePath in the file is overridden by the file itself, as 4.9.3 does
    conf.write_text(f"kvConfigPath={tmp_path / 'kvConfig.json'}\nconfigStorePath={tmp_path / 'elsewhere'}\n"
                    "listenPort=0\n", encoding="utf-8")
    config = namesrv_config_of(str(conf))
    assert config.config_store_path == str(conf)
    updated = run(_ask(config, RequestCode.UPDATE_NAMESRV_CONFIG, b"orderMessageEnable=true\n"))
    assert updated.code == ResponseCode.SUCCESS
    assert not (tmp_path / "elsewhere").exists()
    assert parse_properties_text(conf.read_text(encoding="utf-8"))["orderMessageEnable"] == "true"

    restarted = namesrv_config_of(str(conf))  # the next start with the same -c file
    assert restarted.order_message_enable
    settings = parse_properties_text(run(_ask(restarted, RequestCode.GET_NAMESRV_CONFIG)).body.decode())
    assert settings["orderMessageEnable"] == "true"
    assert settings["kvConfigPath"] == str(tmp_path / "kvConfig.json")


def test_without_a_conf_file_and_with_a_port(tmp_path: Path) -> None:
    assert namesrv_config_of(None).config_store_path == NamesrvConfig().config_store_path
    conf = tmp_path / "n.conf"
    conf.write_text("listenPort=1234\n", encoding="utf-8")
    assert namesrv_config_of(str(conf), 0).listen_port == 0
    assert namesrv_config_of(str(conf)).listen_port == 1234
