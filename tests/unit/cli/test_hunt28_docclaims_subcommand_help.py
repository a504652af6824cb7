"""A sub-command's own ``--help`` says what the command does: ``rocketstore topic create --help`` (and every
other sub-command's) printed its usage and options only, the line saying what it does shown only in its
parent's list; ``broker-admin config set --help`` so lacked everything it says about which properties take
effect when.  And the positional arguments that are not self-explanatory (``KEY=VALUE`` of ``broker-admin
config set`` / ``namesrv-config set``, ``kv``'s namespace, key and value) have a help line of their own."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from rocketstore.cli.main import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


def _help(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*words, "--help"])
    assert exited.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse's line wrapping undone


def test_every_sub_command_describes_itself() -> None:
    missing = [" ".join(path) for path, parser in _commands(build_parser()) if not (parser.description or "").strip()]
    assert missing == []


def test_a_sub_commands_help_says_what_its_parent_lists(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "topic", "create")
    assert "Create or update a topic on brokers." in text
    text = _help(capsys, "broker-admin", "config", "set")
    assert "most take effect at the next start" in text  # the parent's whole help line, not a summary


def test_a_description_of_its_own_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    assert "Open DIR read-only and check" in _help(capsys, "store", "verify")


@pytest.mark.parametrize("words", [("broker-admin", "config", "set"), ("namesrv-config", "set"),
                                   ("kv", "get"), ("kv", "put"), ("kv", "delete")])
def test_positional_arguments_say_what_they_are(words: tuple[str, ...]) -> None:
    parser = dict(_commands(build_parser()))[words]
    missing = [action.dest for action in parser._actions
               if not action.option_strings and not (action.help or "").strip()]
    assert missing == []
