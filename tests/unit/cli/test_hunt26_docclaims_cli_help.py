"""Every option of every ``rocketstore`` command says what it is in ``--help``: ``group reset-offset -t``,
``group client-offsets -t``, ``group time-span -t``, ``group correction-offset -t``, ``message by-offset``'s
and ``print-queue``'s ``-t`` / ``-i``, ``message print -t`` and ``message check-rt -t`` were listed with no
line of their own."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from rocketstore.cli.main import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def test_every_option_has_a_help_line() -> None:
    missing = [f"{' '.join(path)} {'/'.join(action.option_strings)}"
               for path, parser in _commands(build_parser()) for action in parser._actions
               if action.option_strings and action.help is not argparse.SUPPRESS and not (action.help or "").strip()]
    assert missing == []
