"""The layer order of ../shared/DESIGN.md, checked on the source: a wrong-way import fails here.

Rooms: `gateway -> retrieval -> ingest`, `gateway -> runtimes`, `ui` is data, nothing imports
`tests` (or the `bench/` scripts). Inside gateway, `gateway.cli` and `gateway.web` are the top:
nothing else in gateway imports them, and each CLI command module imports only gateway.cli.root,
so that `gateway.cli.<module>` imports on its own (checked in a fresh interpreter as well).

Imports are read statically with `ast` from every .py file, including imports inside functions,
under `if TYPE_CHECKING:`, relative ones, and `importlib.import_module("literal")`, so a lazy
import cannot hide a wrong direction.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("gateway", "ingest", "retrieval", "runtimes", "ui")
TOP = ("gateway.cli", "gateway.web", "gateway.__main__")  # __main__ is `python -m gateway`, the CLI

# (importing modules, modules they must not import, why). A module matches a name when it is that
# name or inside it ("gateway" matches gateway.config; "gateway.cli" does not match gateway.client).
RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (("ingest",), ("gateway", "retrieval", "runtimes", "ui"), "ingest is the bottom room"),
    (("retrieval",), ("gateway", "runtimes", "ui"), "retrieval sits on ingest only"),
    (("runtimes",), ("gateway", "ingest", "retrieval", "ui"), "runtimes stand alone below gateway"),
    (("ui",), ("gateway", "ingest", "retrieval", "runtimes"), "ui is data"),
    (ROOMS + ("bench",), ("tests",), "nothing imports tests"),
    (ROOMS, ("bench",), "the rooms do not import the benchmark scripts"),
    (("gateway.web",), ("gateway.cli",), "the web app is not built on the CLI"),
    # gateway's inner rooms (issue 24): the answer core knows no transport; the records run no answer
    # and no doctor (gateway.qualification runs the gates and keeps their verdicts through records).
    # (records -> runtimes is still there: active_profile reads profiles.)
    (("gateway.answer",), ("gateway.web", "gateway.cli"), "the answer core is transport-free"),
    (("gateway.records",), ("gateway.answer", "gateway.qualification", "gateway.web", "gateway.cli"),
     "the records store rows"),
]

# Known exceptions as (importer, imported), each with a comment naming its issue. Keep it empty.
ALLOWED: set[tuple[str, str]] = set()


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, module name) for every import in `source`; `from a import b` gives both a and a.b."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                full = ".".join(base + ([node.module] if node.module else []))
            else:
                full = node.module or ""
            yield node.lineno, full
            for alias in node.names:
                yield node.lineno, f"{full}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value


def all_imports() -> list[tuple[str, str, int, str]]:
    """(importer, file, line, imported) over every .py file of the rooms and of bench/."""
    found = []
    for top in (*ROOMS, "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = module_name(path)
            source = path.read_text(encoding="utf-8")
            for line, name in imported_names(source, module, path.name == "__init__.py"):
                found.append((module, str(path.relative_to(ROOT)), line, name))
    return found


def violations() -> list[str]:
    bad: dict[tuple[str, int, str], str] = {}  # one report per line and reason: `from a import b` is a and a.b
    for importer, file, line, name in all_imports():
        why = [reason for sources, banned, reason in RULES
               if _within(importer, sources) and _within(name, banned)]
        if _within(importer, ("gateway",)) and not _within(importer, TOP) and _within(name, TOP):
            why.append("gateway.cli and gateway.web are the top: nothing else in gateway imports them")
        cli_module = _within(importer, ("gateway.cli",)) and importer not in ("gateway.cli", "gateway.cli.__main__")
        if cli_module and _within(name, ("gateway.cli",)) and not _within(name, ("gateway.cli.root",)):
            why.append("a CLI command module imports gateway.cli.root only (the package imports it)")
        if why and not any(_within(importer, (a,)) and _within(name, (b,)) for a, b in ALLOWED):
            bad.setdefault((file, line, "; ".join(why)), f"{file}:{line}: {importer} imports {name}: {'; '.join(why)}")
    return sorted(bad.values())


def test_the_parser_sees_every_kind_of_import() -> None:
    source = """
import retrieval.types
from . import sibling
from ..web import app
from gateway import cli
def later():
    from gateway.qualification.gates import run_doctor
    importlib.import_module("ingest.sandbox")
"""
    names = {n for _, n in imported_names(source, "gateway.cli.answer", False)}
    assert {"retrieval.types", "gateway.cli.sibling", "gateway.web.app", "gateway.cli",
            "gateway.qualification.gates", "ingest.sandbox"} <= names
    assert "gateway.sibling" in {n for _, n in imported_names("from . import sibling", "gateway", True)}


def test_the_scan_covers_the_rooms() -> None:
    importers = {importer for importer, *_ in all_imports()}
    for room in ("gateway", "gateway.cli", "gateway.web", "ingest", "retrieval", "runtimes", "bench"):
        assert any(_within(i, (room,)) for i in importers), f"no imports read from {room}"


def test_no_import_runs_against_the_layer_order() -> None:
    bad = violations()
    assert not bad, "imports against the layer order (DESIGN.md, tests/test_layers.py):\n" + "\n".join(bad)


def test_every_allowed_exception_is_still_needed() -> None:
    seen = {(importer, name) for importer, _, _, name in all_imports()}
    stale = [pair for pair in ALLOWED
             if not any(_within(i, (pair[0],)) and _within(n, (pair[1],)) for i, n in seen)]
    assert not stale, f"remove these from ALLOWED, nothing needs them any more: {stale}"


CLI_MODULES = sorted(module_name(p) for p in (ROOT / "gateway" / "cli").glob("*.py")
                     if p.name != "__main__.py")


@pytest.mark.parametrize("module", CLI_MODULES)
def test_each_cli_module_imports_alone(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"`python -c 'import {module}'` failed:\n{done.stderr}"
