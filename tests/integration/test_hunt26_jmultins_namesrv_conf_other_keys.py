"""``rocketstore namesrv -c FILE`` keeps the file's settings it does not have, as 4.9.3's NamesrvStartup does
(its Configuration registers every property of the -c file): GET_NAMESRV_CONFIG shows them, an
UPDATE_NAMESRV_CONFIG may change them, and the rewrite of FILE after an update writes them back.

Found by running mqadmin getNamesrvConfig / updateNamesrvConfig against 4.9.3's name server and ours, both
started with a file holding ``foo.bar=baz qux`` and ``clientWorkerThreads=4``: 4.9.3 showed both, took
``foo.bar=new`` and rewrote its file with ``foo.bar=new`` and ``clientWorkerThreads=4`` beside
``orderMessageEnable=true``; ours showed neither, refused foo.bar, and its rewrite erased both lines from the
user's file."""

from __future__ import annotations

from pathlib import Path

from rocketstore.cli.serve_cmds import namesrv_config_of
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.namesrv import NameServer, NamesrvConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run

#: what 4.9.3's name server (-c with the file below) wrote to its file after updateNamesrvConfig
#: orderMessageEnable=true then foo.bar=new, its own settings left out (captured from 4.9.3)
JAVA_REWRITTEN_OTHER_KEYS = {"clientWorkerThreads": "4", "foo.bar": "new", "orderMessageEnable": "true"}


async def _calls(config: NamesrvConfig, *requests: tuple[int, bytes]) -> list[RemotingCommand]:
    namesrv = NameServer(config)
    await namesrv.start("127.0.0.1", 0)
    pool = ConnectionPool()
    try:
        return [await pool.request(namesrv.address, RemotingCommand.request(code, {}, body), 10)
                for code, body in requests]
    finally:
        await pool.close()
        await namesrv.close()


def test_the_files_other_settings_are_shown_updated_and_written_back(tmp_path: Path) -> None:
    conf = tmp_path / "ns.conf"
    conf.write_text(f"listenPort=0\nfoo.bar=baz qux\n# a comment\nclientWorkerThreads=4\n"
                    f"kvConfigPath={tmp_path / 'kv.json'}\n", encoding="utf-8")
    config = namesrv_config_of(str(conf))
    shown, order, other, unknown, after = run(_calls(
        config,
        (RequestCode.GET_NAMESRV_CONFIG, b""),
        (RequestCode.UPDATE_NAMESRV_CONFIG, b"orderMessageEnable=true\n"),
        (RequestCode.UPDATE_NAMESRV_CONFIG, b"foo.bar=new\n"),
        # a name neither the name server nor its file has is still refused (4.9.3 drops it silently)
        (RequestCode.UPDATE_NAMESRV_CONFIG, b"newkey=x\n"),
        (RequestCode.GET_NAMESRV_CONFIG, b"")))
    settings = parse_properties_text(shown.body.decode())
    assert settings["foo.bar"] == "baz qux" and settings["clientWorkerThreads"] == "4"
    assert order.code == other.code == ResponseCode.SUCCESS
    assert unknown.code == ResponseCode.SYSTEM_ERROR
    assert parse_properties_text(after.body.decode())["foo.bar"] == "new"

    written = parse_properties_text(conf.read_text(encoding="utf-8"))
    assert {k: written[k] for k in JAVA_REWRITTEN_OTHER_KEYS} == JAVA_REWRITTEN_OTHER_KEYS
    assert "newkey" not in written
    # and the next start with the same file has them still
    restarted = namesrv_config_of(str(conf))
    assert dict(restarted.extra) == {"foo.bar": "new", "clientWorkerThreads": "4"}
    assert restarted.order_message_enable
