"""The training corpus (train/corpus/, issue 23) must stay disjoint from every manual we evaluate on:
no file of it may be an eval/dev, eval/test or sample manual, nor one of the manuals kept for
independent evaluation (../shared/reserved_manuals.txt), and every file must match its README record.
train/check_corpus.py does the checking; this runs it so that CI enforces it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "train" / "check_corpus.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_check_corpus", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checker():
    return _load()


@pytest.fixture(scope="module")
def report(checker):
    return checker.check()


def test_corpus_matches_its_readme_and_is_disjoint_from_eval(report) -> None:
    assert not report.problems, "\n".join(report.problems)


def test_corpus_is_big_and_varied_enough(report) -> None:
    assert len(report.records) >= 30
    assert len(report.repos) >= 10
    assert report.total_bytes < 80_000_000


def test_every_file_matches_its_record_where_the_corpus_is_here(checker) -> None:
    if checker.MANUALS is None:
        pytest.skip("the corpus PDFs are not on this machine: fetched data stays out of this repository "
                    "(MANUALQA_TRAIN_CORPUS or ../shared/train_corpus); the records were checked above")
    report = checker.check()
    assert report.files_present and not report.problems, "\n".join(report.problems)


def test_corpus_is_disjoint_from_the_reserved_manuals(checker, report) -> None:
    reserved = checker.reserved_sha256s()
    if reserved is None:
        pytest.skip(f"{checker.RESERVED} is not beside this checkout")
    assert reserved, "reserved list holds no sha256"
    assert report.reserved_checked
    assert not {r.sha256 for r in report.records} & reserved


def test_check_catches_a_reserved_or_eval_manual(checker, tmp_path: Path) -> None:
    """The check is not vacuous: a corpus file whose sha256 is on the reserved list is reported."""
    first = checker.parse_readme(checker.README.read_text(encoding="utf-8"))[0]
    fake = tmp_path / "reserved_manuals.txt"
    fake.write_text(f"# test\n{first.sha256}\n", encoding="utf-8")
    problems = checker.check(reserved_path=fake, count_pages=False).problems
    assert any(first.file in p and "reserved" in p for p in problems)


def test_train_is_not_packaged() -> None:
    """pyproject's package find must not pick train/ up (it is data, kept out of the wheel)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = pyproject["tool"]["setuptools"]["packages"]["find"]
    assert not any(pattern.split(".")[0] == "train" for pattern in find["include"])
    assert not (ROOT / "train" / "__init__.py").exists()
