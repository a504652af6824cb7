"""The layers import only downwards (STYLE.md section 1); a wrong-way arrow fails here."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rocketstore"

# package -> packages (or top-level modules: config_json reads with remoting's fastjson) it must never import
FORBIDDEN = {
    "message": {"store", "remoting", "namesrv", "broker", "client", "spark", "cli", "config_json"},
    "store": {"remoting", "namesrv", "broker", "client", "spark", "cli", "config_json"},
    "remoting": {"store", "namesrv", "broker", "client", "spark", "cli", "config_json"},
    "namesrv": {"store", "broker", "client", "spark", "cli"},
    "broker": {"client", "spark", "cli", "namesrv"},
    "client": {"store", "broker", "namesrv", "spark", "cli"},
    "spark": {"cli", "broker", "namesrv"},
}
SANS_IO = {"remoting/codec.py", "remoting/frame_decoder.py", "remoting/templates.py", "remoting/command.py",
           "remoting/headers.py", "remoting/header_fields.py", "remoting/send_headers.py", "remoting/codes.py",
           "remoting/versions.py"}
#: The only remoting modules that may touch asyncio and sockets (STYLE.md section 1); busy_poll.py is the
#: transport's event-loop policy (it schedules loop callbacks, no sockets); connection.py, event_loop.py and
#: addresses.py are the parts transport.py was split into (it re-exports them), serving.py the part of
#: connection.py that serves requests (Connection's base class).
TRANSPORT = {"remoting/transport.py", "remoting/server.py", "remoting/busy_poll.py", "remoting/connection.py",
             "remoting/event_loop.py", "remoting/addresses.py", "remoting/serving.py"}
IO_MODULES = {"socket", "asyncio", "uvloop", "selectors", "threading", "time", "logging"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_packages_never_import_upwards() -> None:
    wrong = []
    for package, banned in FORBIDDEN.items():
        for path in (SRC / package).rglob("*.py") if (SRC / package).exists() else []:
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "rocketstore" and len(parts) > 1 and parts[1] in banned:
                    wrong.append(f"{path.relative_to(SRC)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_nothing_imports_cli() -> None:
    wrong = []
    for path in SRC.rglob("*.py"):
        # the CLI itself, and ``python -m rocketstore`` (the console script's twin, the CLI's only entry)
        if path.relative_to(SRC).parts[0] == "cli" or path.relative_to(SRC).as_posix() == "__main__.py":
            continue
        for name in _imports(path):
            if name == "rocketstore.cli" or name.startswith("rocketstore.cli."):
                wrong.append(f"{path.relative_to(SRC)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_protocol_codec_does_no_io() -> None:
    wrong = []
    for rel in SANS_IO:
        path = SRC / rel
        if not path.exists():
            continue
        for name in _imports(path):
            if name.split(".")[0] in IO_MODULES:
                wrong.append(f"{rel} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_only_the_transport_modules_of_remoting_do_io() -> None:
    wrong = []
    for path in sorted((SRC / "remoting").glob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in TRANSPORT:
            continue
        for name in _imports(path):
            if name.split(".")[0] in IO_MODULES:
                wrong.append(f"{rel} imports {name}")
    assert not wrong, "\n".join(wrong)
