"""Ports given to ``rocketstore serve|namesrv|broker`` are checked: 99999 used to be cut to its low 16 bits
by the event loop (the server listened on 34463 without a word)."""

from __future__ import annotations

import pytest

from rocketstore.cli.main import build_parser, main


@pytest.mark.parametrize("argv", [
    ["serve", "--namesrv-port", "99999"],
    ["serve", "--broker-port", "65536"],
    ["serve", "--namesrv-port", "-1"],
    ["namesrv", "--port", "70000"],
    ["broker", "-c", "broker.conf", "--port", "123456"],
    ["serve", "--broker-port", "ten"],
])
def test_a_port_outside_0_to_65535_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "port" in err.splitlines()[-1] and "Traceback" not in err


def test_port_zero_and_the_edges_are_accepted() -> None:
    args = build_parser().parse_args(["serve", "--namesrv-port", "0", "--broker-port", "65535"])
    assert (args.namesrv_port, args.broker_port) == (0, 65535)
    assert build_parser().parse_args(["namesrv", "-p", "9876"]).port == 9876


def test_a_bad_name_server_address_for_the_broker_is_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["broker", "-c", "broker.conf", "-n", "garbage"])
    assert exit_info.value.code == 2
    assert "not HOST:PORT: 'garbage'" in capsys.readouterr().err
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b1\nstorePathRootDir={tmp_path / 'store'}\nlistenPort=0\nnamesrvAddr=nohostport\n")
    assert main(["broker", "-c", str(conf)]) == 2
    err = capsys.readouterr().err
    assert err == f"rocketstore: error: namesrvAddr in {conf}: not HOST:PORT: 'nohostport'\n"
    assert not (tmp_path / "store").exists()


def test_serve_on_a_store_path_that_is_a_file_names_the_setting(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A file given as --store is refused as the broker refuses it ("storePathRootDir ... is not a
    directory"), before the name server's files under it fail with a bare ENOTDIR naming kvConfig.json."""
    not_a_dir = tmp_path / "afile"
    not_a_dir.write_text("")
    assert main(["serve", "--store", str(not_a_dir), "--namesrv-port", "0", "--broker-port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"storePathRootDir {not_a_dir} is not a directory" in err and "kvConfig" not in err
