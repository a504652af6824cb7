"""What a user installing rocketstore as a wheel (not ``pip install -e``) gets: the wheel and sdist built from
the checkout hold every module, the PEP 561 ``py.typed`` marker and any package data; the core install
(numpy, pyyaml) imports every module outside the Spark data sources; and every third-party package the code
imports is a declared dependency, at module level a core one.

The builds run offline: ``pip wheel --no-build-isolation`` and setuptools' own ``build_sdist`` with the
environment's setuptools (the test extra names setuptools>=77, the build-system's requirement), on a copy of
the files a ``git archive`` holds, so no build/ or egg-info lands in the checkout."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rocketstore"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: import name -> the distribution that provides it, where the two differ (py4j comes with pyspark)
DIST_OF_IMPORT = {"yaml": "pyyaml", "py4j": "pyspark", "prometheus_client": "prometheus-client"}
#: the extras a user installs for a feature (test, dev and bench are the project's own)
USER_EXTRAS = ("fast", "plot", "spark")
#: modules that need the spark extra to import at all (the PySpark data sources); everything else imports
#: with the core dependencies only
SPARK_ONLY = {"rocketstore.spark.arrow_decode", "rocketstore.spark.sink", "rocketstore.spark.store_source",
              "rocketstore.spark.stream_source"}


def _names(requirements: list[str]) -> set[str]:
    out = set()
    for req in requirements:
        name = req.split(";")[0].strip()
        for stop in "<>=!~[ ":
            name = name.split(stop)[0]
        out.add(name.lower().replace("_", "-"))
    return out


CORE = _names(PYPROJECT["project"]["dependencies"])
EXTRAS = {name: _names(reqs) for name, reqs in PYPROJECT["project"]["optional-dependencies"].items()}


#: what an editor or a merge leaves beside the sources, never meant for the package
STRAY = (".pyc", ".pyo", ".swp", ".tmp", ".orig", ".rej", ".bak")


def _source_files() -> list[Path]:
    """The package's files in the checkout: its modules and its data (py.typed, any resource)."""
    return sorted(p for p in SRC.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.name.startswith(".") and not p.name.endswith("~") and p.suffix not in STRAY)


def _tree(dest: Path, *, with_tests: bool = False) -> Path:
    """The files of the checkout a build reads (as ``git archive`` would give them), copied to *dest*."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(SRC, dest / "src" / "rocketstore", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "MANIFEST.in", "BENCHMARKS.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    if with_tests:
        shutil.copytree(ROOT / "docs", dest / "docs", ignore=ignore)
        shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    return dest


def _need_backend() -> None:
    try:
        import setuptools
    except ImportError:  # pragma: no cover - the test extra installs it
        pytest.fail("setuptools is not installed: pip install -e '.[test]'")
    major = int(setuptools.__version__.split(".")[0])
    assert major >= 77, (f"setuptools {setuptools.__version__} cannot build this project (PEP 639 license "
                         f"field): pip install -e '.[test]' installs setuptools>=77")


def test_the_wheel_holds_every_module_the_typed_marker_and_the_package_data(tmp_path: Path) -> None:
    _need_backend()
    tree = _tree(tmp_path / "tree")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--no-index", "-q", "-w", str(tmp_path / "dist"), str(tree)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (tmp_path / "dist").glob("rocketstore-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    expected = {"rocketstore/" + p.relative_to(SRC).as_posix() for p in _source_files()}
    assert "rocketstore/py.typed" in expected, "src/rocketstore/py.typed is missing"
    missing = sorted(expected - names)
    assert not missing, f"in the source tree but not in the wheel: {missing}"
    assert {n.split("/")[0] for n in names} == {"rocketstore", dist_info}, sorted(names)
    assert "rocketstore = rocketstore.cli.main:main" in entry_points
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert f"{dist_info}/licenses/LICENSE" in names, "the Apache-2.0 text is not in the wheel"
    for dependency in CORE:
        assert any(line.lower().startswith(f"requires-dist: {dependency}") for line in metadata.splitlines())


def test_the_sdist_holds_the_package_docs_and_tests(tmp_path: Path) -> None:
    _need_backend()
    tree = _tree(tmp_path / "tree", with_tests=True)
    out = tmp_path / "sdist"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
                           "print(b.build_sdist(sys.argv[1]))", str(out)],
                          cwd=tree, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = out.glob("rocketstore-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    wanted = {"src/rocketstore/" + p.relative_to(SRC).as_posix() for p in _source_files()}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    wanted |= {"tests/conftest.py", "tests/unit/test_hunt18_packaging_wheel.py", "pyproject.toml", "README.md",
               "LICENSE"}
    missing = sorted(wanted - names)
    assert not missing, f"not in the sdist: {missing}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level name of every absolute import, whether it runs when the module is imported: at module
    level and not inside a ``try`` that catches its ImportError)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, eager: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                out.extend((alias.name.split(".")[0], eager) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                out.append((child.module.split(".")[0], eager))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, False)
            elif isinstance(child, ast.Try) and any(
                    h.type is None or any(n in ast.unparse(h.type) for n in ("ImportError", "Exception"))
                    for h in child.handlers):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), False)
                for part in (*child.handlers, *child.orelse, *child.finalbody):
                    visit(part, eager)
            else:
                visit(child, eager)

    visit(tree, True)
    return out


def test_every_third_party_import_is_a_declared_dependency() -> None:
    """A module-level import of a package outside the core dependencies breaks ``import`` (and the CLI) on
    a core install; one used lazily must at least be in the extra a user installs for that feature."""
    user_extras = set().union(*(EXTRAS[name] for name in USER_EXTRAS))
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        module = "rocketstore." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for name, eager in _imports(path):
            if name in sys.stdlib_module_names or name in ("rocketstore", "__future__"):
                continue
            dist = DIST_OF_IMPORT.get(name, name).lower().replace("_", "-")
            allowed = CORE | (EXTRAS["spark"] if module in SPARK_ONLY else set()) if eager else CORE | user_extras
            if dist not in allowed:
                wrong.append(f"{module}: {'module-level' if eager else 'lazy'} import of {name} ({dist})")
    assert not wrong, wrong


CORE_ONLY_CHILD = """
import importlib, pkgutil, sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # not installed: what a core install (numpy, pyyaml) lacks
import rocketstore
failed = []
for info in pkgutil.walk_packages(rocketstore.__path__, "rocketstore."):
    try:
        importlib.import_module(info.name)
    except ImportError as exc:
        failed.append(info.name)
print(",".join(sorted(failed)))
from rocketstore.cli.main import build_parser
build_parser()
"""


def test_a_core_install_imports_every_module_but_the_spark_data_sources() -> None:
    blocked = set()
    for extra in ("fast", "plot", "spark", "test", "bench"):
        blocked |= EXTRAS[extra]
    blocked = {{v: k for k, v in DIST_OF_IMPORT.items()}.get(d, d).replace("-", "_") for d in blocked - CORE}
    blocked |= {"py4j", "prometheus_client", "mpl_toolkits"}
    done = subprocess.run([sys.executable, "-c", CORE_ONLY_CHILD, ",".join(sorted(blocked))],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert set(filter(None, done.stdout.strip().split(","))) == SPARK_ONLY, done.stdout


def test_the_missing_extra_hint_names_the_package_not_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketstore.cli.pipeline_cmds import PipelineError, _need_spark_extra

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(PipelineError) as raised:
        _need_spark_extra()
    assert "pip install 'rocketstore[spark]'" in str(raised.value)
