"""The ``rocketstore`` command: a parser with one sub-command group per module.

Each group module exposes ``register(subparsers)``, which adds its sub-command(s) and sets a ``handler``
default: a function taking the parsed namespace and returning the exit status.  Adding a group (broker,
serve, ...) is one entry in :data:`COMMAND_GROUPS`.

Exit status: 0 done; 2 when the command cannot run as given: a usage error (argparse), or for the local
commands (serve, namesrv, broker, store, pipeline) a path or config file that cannot be used, the
RocketStoreError or OSError caught here.  1 when it ran and something failed or was found: every client
command's runtime error (no route, a refusal, a server that is down, an output file it cannot write:
output.run_command), and ``store verify``'s problems.  This is diff's and cmp's split (1 found, 2 trouble),
so a script can tell a store with problems from one that could not be checked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from rocketstore.cli import (
    admin_cmds,
    broker_cmds,
    client_cmds,
    cluster_cmds,
    export_cmds,
    exporter_cmds,
    group_admin_cmds,
    namesrv_admin_cmds,
    pipeline_cmds,
    serve_cmds,
    store_cmds,
    trace_cmds,
)
from rocketstore.cli.output import apply_client_tls, end_of_output, stdout_closed, trim_names
from rocketstore.errors import RocketStoreError

__all__ = ["COMMAND_GROUPS", "build_parser", "main"]

#: ``register(subparsers)`` of every sub-command group, in help order.
COMMAND_GROUPS: list[Callable[[argparse._SubParsersAction], None]] = [
    serve_cmds.register, store_cmds.register, admin_cmds.register, group_admin_cmds.register,
    cluster_cmds.register, broker_cmds.register, namesrv_admin_cmds.register, client_cmds.register,
    trace_cmds.register, pipeline_cmds.register, export_cmds.register, exporter_cmds.register]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketstore", description="A RocketMQ 4.9-compatible message store and broker.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for register in COMMAND_GROUPS:
        register(subparsers)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every sub-command without a description of its own the help line its parent lists it with, so
    ``rocketstore topic create --help`` says what the command does, not only its options."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                line = helps.get(name)
                if sub.description is None and line:
                    sub.description = line[:1].upper() + line[1:] + "."
                _describe(sub)


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub-)sub-command *args* was parsed for (``rocketstore kv get``), followed down the
    sub-command names the namespace holds: its usage line is the one an error about its arguments wants."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named with the sub-command's usage, not the top level's "rocketstore [-h] COMMAND ..."
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    trim_names(args)  # as mqadmin trims its option values
    handler = getattr(args, "handler", None)
    if handler is None:  # a group registered without a handler of its own
        parser.print_help(sys.stderr)
        return 2
    code = None
    try:
        if hasattr(args, "tls"):  # a client command (add_common's --tls / --tls-config)
            apply_client_tls(args)
        code = int(handler(args))
        sys.stdout.flush()  # what it still buffers: a reader gone by now is told here, not by a flush at exit
        return code
    except BrokenPipeError as exc:
        if stdout_closed():  # the reader went away (``| head``): the end of the output, not an error
            end_of_output()
            return 0 if code is None else code
        print(f"rocketstore: error: {exc}", file=sys.stderr)
        return 2
    except (RocketStoreError, OSError) as exc:  # a broken store or an unreadable path, not a bug: no traceback
        print(f"rocketstore: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C ends a command (consume, watch, a Spark job): the shell's 128 + SIGINT
        print("rocketstore: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
