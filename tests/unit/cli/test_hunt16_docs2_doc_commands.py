"""Every ``rocketstore ...`` command line docs/*.md shows is one the CLI accepts, as README.md's are
(tests/unit/cli/test_readme_commands.py): the lines of the pages' shell blocks, a line ending in ``\\``
joined to the next, ``# comments`` cut, parsed by the real argument parser.  A usage sketch such as
``[--topics A,B]`` is not a command a reader can paste, and fails here.

It also keeps the pages' Python blocks honest: each one must be run by some test (listed in BLOCK_TESTS), so a
block added to a page without one fails ``test_every_docs_python_block_is_run``."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rocketstore.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[3]
DOCS = sorted((ROOT / "docs").glob("*.md"))

#: the text that tells each docs/*.md Python block apart, and the test file that runs it
BLOCK_TESTS = {
    ('.option("path", "/data/rocketmq/store")', "tests/spark/test_hunt15_docs_spark_snippets.py"),
    ('format("rocketmq")', "tests/spark/test_hunt15_docs_spark_snippets.py"),
    ("enable_trace=True", "tests/integration/test_hunt16_docs2_snippets.py"),
    ("client_trust_cert_path=", "tests/integration/test_hunt16_docs2_snippets.py"),
    ("NameServer(tls=server_tls)", "tests/integration/test_hunt16_docs2_snippets.py"),
}


def shell_lines(page: Path) -> list[str]:
    """The ``rocketstore`` command lines of *page*'s sh / bash / shell blocks, continuations joined."""
    lines: list[str] = []
    in_block = False
    pending = ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_block = line.strip() in ("```sh", "```bash", "```shell") if not in_block else False
            continue
        if not in_block:
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if re.match(r"(\.venv/bin/)?rocketstore\s", line):
            lines.append(line)
    return lines


def python_blocks(page: Path) -> list[str]:
    return [part[:part.index("```")] for part in page.read_text(encoding="utf-8").split("```python\n")[1:]]


LINES = [(page.name, line) for page in DOCS for line in shell_lines(page)]


def test_the_docs_show_cli_commands() -> None:
    pages = {name for name, _ in LINES}
    assert {"metrics.md", "spark.md", "tls.md", "trace.md"} <= pages, pages
    assert len(LINES) >= 16


@pytest.mark.parametrize(("page", "line"), LINES)
def test_each_docs_command_line_parses(page: str, line: str) -> None:
    words = shlex.split(line, comments=True)
    try:
        parsed = build_parser().parse_args(words[1:])
    except SystemExit as exc:  # argparse refuses with exit status 2 and a usage message
        raise AssertionError(f"the CLI refuses docs/{page}'s {line!r}") from exc
    assert getattr(parsed, "handler", None) is not None, line


def test_every_docs_python_block_is_run() -> None:
    for page in DOCS:
        for block in python_blocks(page):
            claimed = [path for marker, path in BLOCK_TESTS if marker in block]
            assert len(claimed) == 1, f"docs/{page.name}'s block {block.splitlines()[0]!r}: claimed by {claimed}"
    for marker, path in BLOCK_TESTS:
        assert (ROOT / path).is_file(), path
        assert sum(marker in block for page in DOCS for block in python_blocks(page)) == 1, marker
