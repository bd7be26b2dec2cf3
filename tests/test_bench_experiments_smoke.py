"""Every one-off experiment in bench/experiments/ still runs against today's code, up to where it
would start measuring: its module imports and its argument parsing answers `--help` (in a child
process, as `python -m bench.experiments.<name> --help`), and every name it takes from manualqa's own
packages, at the top or inside a function, still exists and still takes the keywords it passes.

The experiments themselves are not run here (minutes to hours each; their recorded results are in
docs/bench/experiments/). An experiment that no longer fits the code is fixed, or deleted with its
recorded result kept (docs/bench/experiments/<name>.md stays).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (REPO / "bench" / "experiments").glob("*.py") if p.stem != "__init__")
OWN = ("bench", "gateway", "retrieval", "runtimes", "ingest", "train", "deploy")


def test_the_experiments_are_found() -> None:
    assert len(EXPERIMENTS) >= 10 and "headings" in EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_help_parses(name: str) -> None:
    proc = subprocess.run([sys.executable, "-m", f"bench.experiments.{name}", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # the timeout only bounds a hang
    assert proc.returncode == 0, f"bench.experiments.{name} --help:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
    assert "usage:" in proc.stdout


def _own_names(tree: ast.AST) -> tuple[dict[str, object], list[str]]:
    """What the script binds from manualqa's packages (name -> object), and the names that are gone."""
    bound: dict[str, object] = {}
    gone = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in OWN:
            module = importlib.import_module(node.module)
            for alias in node.names:
                obj = getattr(module, alias.name, None)
                if obj is None:
                    try:
                        obj = importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        gone.append(f"line {node.lineno}: {node.module} has no {alias.name}")
                        continue
                bound[alias.asname or alias.name] = obj
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OWN:
                    module = importlib.import_module(alias.name)
                    if alias.asname:
                        bound[alias.asname] = module
    return bound, gone


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_what_it_takes_from_manualqa_still_exists(name: str) -> None:
    tree = ast.parse((REPO / "bench" / "experiments" / f"{name}.py").read_text(encoding="utf-8"))
    bound, problems = _own_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, obj, label = node.func, None, ""
        if isinstance(func, ast.Name) and func.id in bound:
            obj, label = bound[func.id], func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and isinstance(bound.get(func.value.id), types.ModuleType):
            module = bound[func.value.id]
            obj, label = getattr(module, func.attr, None), f"{func.value.id}.{func.attr}"
            if obj is None:
                problems.append(f"line {node.lineno}: {label} is gone")
                continue
        if obj is None or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        problems += [f"line {node.lineno}: {label}() takes no keyword {kw.arg!r}"
                     for kw in node.keywords if kw.arg is not None and kw.arg not in params]
    assert not problems, f"bench/experiments/{name}.py:\n" + "\n".join(problems)
