"""bench/ as a suite: `make bench` (bench.run_all) runs every script in bench/suite/, each imports and
answers --help without measuring anything, and each writes its own section through the harness."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from bench import harness
from bench.run_all import SUITE, assemble

SUITE_DIR = Path(harness.REPO) / "bench" / "suite"
MODULES = sorted(p.stem for p in SUITE_DIR.glob("*.py") if p.stem != "__init__")


def test_run_all_runs_exactly_the_suite_folder() -> None:
    assert sorted(SUITE) == MODULES, "bench/run_all.py SUITE and the modules in bench/suite/ differ"
    assert len(SUITE) == len(set(SUITE))


@pytest.mark.parametrize("name", MODULES)
def test_suite_script_imports_and_answers_help_without_measuring(name: str, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"bench.suite.{name}")
    monkeypatch.setattr(sys, "argv", [f"bench.suite.{name}", "--help"])
    with pytest.raises(SystemExit) as stop:
        module.main()
    assert stop.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("name", MODULES)
def test_every_suite_script_has_its_section(name: str) -> None:
    assert harness.section_path(f"bench.suite.{name}") == harness.SECTIONS / f"{name}.md"
    assert (harness.SECTIONS / f"{name}.md").is_file(), f"no docs/bench/{name}.md: run python -m bench.suite.{name}"


def test_a_section_file_no_suite_script_writes_is_refused(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    stray = harness.SECTIONS / "zz_hand_written.md"
    monkeypatch.setattr("bench.run_all.SECTIONS", tmp_path)
    for name in SUITE:
        (tmp_path / f"{name}.md").write_text(f"## {name}\n", encoding="utf-8")
    (tmp_path / stray.name).write_text("## by hand\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="zz_hand_written.md"):
        assemble(tmp_path / "benchmarks.md")


def test_write_section_ends_with_rerun_command_commit_and_machine(tmp_path: Path) -> None:
    out = harness.write_section("bench.suite.example", "## Example\n\n| a |\n|---|\n| 1 |\n",
                                out=tmp_path / "example.md", argv=["--rounds", "2"], conditions="Quiet box.")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## Example\n")
    facts = text.rstrip().splitlines()[-1]
    assert "`python -m bench.suite.example --rounds 2`" in facts and "at commit `" in facts
    assert "Machine: " in facts and "Python " in facts and facts.endswith("Quiet box.")
    assert harness.section_path("bench.experiments.example") == harness.EXPERIMENTS / "example.md"
    with pytest.raises(ValueError):
        harness.section_path("gateway.example")


def test_harness_reads_this_process_and_finds_a_free_port() -> None:
    mem = harness.proc_mib(os.getpid(), "VmRSS", "VmHWM", "RssAnon")
    assert set(mem) == {"VmRSS", "VmHWM", "RssAnon"} and 0 < mem["VmRSS"] <= mem["VmHWM"]
    assert harness.rss_mib() > 0 and harness.peak_rss_mib() > 0 and harness.cpu_seconds(os.getpid()) > 0
    assert 0 < harness.free_port() < 65536
    env = harness.tree_env(Path("/tmp/data"), extra={"MANUALQA_X": "1"})
    assert env["MANUALQA_DATA"] == "/tmp/data" and env["HF_HUB_OFFLINE"] == "1" and env["MANUALQA_X"] == "1"
    with harness.source_tree(harness.REPO) as tree:
        assert tree == harness.REPO
