"""``--help`` as a reader of the docs reads it: the top-level list names every pipeline job docs/spark.md
describes (``rebuild`` too), and the exporter's ``--json`` says what docs/metrics.md says it does (samples of
one ``--once`` collection; it has no table to replace and is refused without ``--once``)."""

from __future__ import annotations

import re

import pytest

from rocketstore.cli.main import build_parser, main


def help_text(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*words, "--help"])
    assert exited.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse's line wrapping undone


def test_the_command_list_names_every_pipeline_job(capsys: pytest.CaptureFixture[str]) -> None:
    listed = re.search(r"pipeline (.*?) export ", help_text(capsys))
    assert listed, "no pipeline line in rocketstore --help"
    jobs = re.findall(r"^ {4}(\w+) ", build_parser()._subparsers._group_actions[0].choices["pipeline"]
                      .format_help(), re.MULTILINE)
    assert set(jobs) == {"archive", "report", "rebuild"}
    for job in jobs:
        assert job in listed.group(1), f"rocketstore --help: pipeline {listed.group(1)!r} leaves out {job}"


def test_the_exporters_json_flag_says_it_goes_with_once(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(capsys, "exporter")
    found = re.search(r".* --json (.*?) --request-timeout-s REQUEST_TIMEOUT_S ", text)  # the flag's own line
    assert found, text
    assert "--once" in found.group(1) and "table" not in found.group(1), found.group(1)
    with pytest.raises(SystemExit) as refused:  # without --once: a usage error, as the help says
        main(["exporter", "--json"])
    assert refused.value.code == 2
    assert "--once" in capsys.readouterr().err
