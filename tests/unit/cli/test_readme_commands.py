"""Every ``rocketstore ...`` command line the README shows a newcomer is one the CLI accepts: the lines of its
shell blocks (``rocketstore`` or ``.venv/bin/rocketstore`` first, a trailing ``&`` and ``# comment`` cut) and
the README's first command's ``serve`` are parsed by the real argument parser, so a renamed command or
option fails here instead of in a user's shell."""

from __future__ import annotations

import re
import runpy
import shlex
from pathlib import Path

import pytest

from rocketstore.cli.main import build_parser

README = Path(__file__).resolve().parents[3] / "README.md"


def _shell_lines() -> list[str]:
    lines: list[str] = []
    in_block = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_block = line.strip() in ("```sh", "```bash", "```shell") if not in_block else False
            continue
        if not in_block:
            continue
        for part in line.split("&&"):
            part = part.strip()
            if re.match(r"(\.venv/bin/)?rocketstore\s", part):
                lines.append(part)
    return lines


LINES = _shell_lines()


def _args(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    while words and words[-1] == "&":
        words.pop()
    return words[1:]


def test_the_readme_shows_cli_commands() -> None:
    assert len(LINES) >= 30  # the CLI block and the main job's command


@pytest.mark.parametrize("line", LINES)
def test_each_readme_command_line_parses(line: str) -> None:
    args = _args(line)
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit as exc:  # argparse refuses with exit status 2 and a usage message
        raise AssertionError(f"the CLI refuses the README's {line!r}") from exc
    assert getattr(parsed, "handler", None) is not None, line


def test_the_readme_embedded_store_example_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The first Python block of "## The embedded store", run as written in a fresh directory."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The embedded store"):]
    code = section[section.index("```python\n") + len("```python\n"):]
    code = code[:code.index("```")]
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "readme_example.py"
    script.write_text(code, encoding="utf-8")
    runpy.run_path(str(script), run_name="readme_example")
    printed = capsys.readouterr().out.splitlines()
    status, _msg_id, queue_offset = printed[0].split()
    assert (status, queue_offset) == ("PutMessageStatus.PUT_OK", "0")
    assert printed[1].split()[:2] == ["0", "TagA"] and printed[1].endswith("b'hello'")
    assert printed[2] == "0"  # offset_by_time of the message's own store time: its queue offset
    assert (tmp_path / "mystore" / "commitlog").is_dir()
